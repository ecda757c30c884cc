import Foundation

/// Builds cache keys: one documented, deterministic format.
///
/// `base` is the cache-key filter's result, else the URL's absolute string. A thumbnail adds
/// `-thumbnail(WxH,fit|fill)`, a transformer adds `-<transformerKey>`, in that order; when anything was added and
/// the URL path has a short alphanumeric extension (1–5 characters), `.<ext>` is appended again so the key still
/// ends in the image's extension (the disk cache names files after it):
///
///     https://h/a.png                      (no thumbnail, no transformer)
///     https://h/a.png-thumbnail(256x256,fit)-resize(100x100,aspectFit,lanczos3).png
enum CacheKeys {
    /// The thumbnail suffix, e.g. `thumbnail(256x256,fit)`.
    static func thumbnailSuffix(_ size: PixelSize, preserveAspectRatio: Bool) -> String {
        "thumbnail(\(size.width)x\(size.height),\(preserveAspectRatio ? "fit" : "fill"))"
    }

    /// The key for `base` with the given suffixes.
    static func key(base: String, url: URL, thumbnail: String?, transformerKey: String?) -> String {
        let suffixes = [thumbnail, transformerKey].compactMap { $0 }.filter { !$0.isEmpty }
        guard !suffixes.isEmpty else { return base }
        var key = base + "-" + suffixes.joined(separator: "-")
        if let ext = shortExtension(of: url) { key += "." + ext }
        return key
    }

    /// The URL path's extension when it is 1–5 ASCII letters or digits.
    static func shortExtension(of url: URL) -> String? {
        let ext = url.pathExtension
        guard (1...5).contains(ext.count), ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return nil
        }
        return ext.lowercased()
    }
}
