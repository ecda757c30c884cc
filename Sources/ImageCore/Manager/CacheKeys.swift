import Foundation

/// Builds cache keys: one documented, deterministic format.
///
/// `base` is the cache-key filter's result, else the URL's absolute string. Then, in this order and each only
/// when it applies: `-partition(<key>)` (``ImageContextOption/cachePartitionKey``), `-thumbnail(WxH,fit|fill)`,
/// `-orientation(raw)` (decode options that keep raw EXIF pixels), `-<transformerKey>`. When anything was added
/// and the URL path has a short alphanumeric extension (1–5 characters), `.<ext>` is appended again so the key
/// still ends in the image's extension (the disk cache names files after it). The original key is the base
/// plus the partition part, so a partitioned load's original is partitioned too:
///
///     https://h/a.png                      (no thumbnail, no transformer)
///     https://h/a.png-thumbnail(256x256,fit)-resize(100x100,aspectFit,lanczos3).png
///     https://h/a.png-partition(tenant-7).png                      (its original key)
enum CacheKeys {
    /// The thumbnail part, e.g. `thumbnail(256x256,fit)`.
    static func thumbnailSuffix(_ size: PixelSize, preserveAspectRatio: Bool) -> String {
        "thumbnail(\(size.width)x\(size.height),\(preserveAspectRatio ? "fit" : "fill"))"
    }

    /// The partition part, e.g. `partition(tenant-7)`.
    static func partitionPart(_ partition: String) -> String { "partition(\(partition))" }

    /// The part of decodes that keep raw (un-oriented) pixels.
    static let rawOrientationPart = "orientation(raw)"

    /// The key for `base` with the given parts (nil and empty parts are skipped).
    static func key(base: String, url: URL, parts: [String?]) -> String {
        var key = base
        var added = false
        for case let part? in parts where !part.isEmpty {
            key += "-" + part
            added = true
        }
        guard added else { return base }
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
