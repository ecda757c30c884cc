import Foundation

/// Builds cache keys: one documented, deterministic format.
///
/// `base` is the cache-key filter's result, else the URL's absolute string. Then, in this order and each only
/// when it applies: `-partition(<key>)` (``ImageContextOption/cachePartitionKey``), `-thumbnail(WxH,fit|fill)`,
/// `-orientation(raw)` (decode options that keep raw EXIF pixels), `-color(srgb)` (decodes converted to sRGB),
/// `-<transformerKey>`. When anything was added
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

    /// The part of decodes that convert colour to sRGB (``ImageDecodeOptions/convertToSRGB``).
    static let sRGBPart = "color(srgb)"

    /// The key for `base` with the given parts, in this order (nil and empty parts are skipped).
    ///
    /// Written in one pass into a buffer of the exact size: one allocation, no appends.
    static func key(
        base: String, url: URL, absoluteString: String, partition: String? = nil, thumbnail: String? = nil,
        orientation: String? = nil, transformer: String? = nil
    ) -> String {
        let length = partLength(partition) + partLength(thumbnail) + partLength(orientation) + partLength(transformer)
        guard length > 0 else { return base }
        let ext = URLScan.shortExtension(of: url, absoluteString: absoluteString)
        let total = base.utf8.count + length + (ext.map { 1 + $0.count } ?? 0)
        return String(unsafeUninitializedCapacity: total) { buffer in
            var offset = 0
            write(base, separator: nil, into: buffer, at: &offset)
            write(partition, separator: dash, into: buffer, at: &offset)
            write(thumbnail, separator: dash, into: buffer, at: &offset)
            write(orientation, separator: dash, into: buffer, at: &offset)
            write(transformer, separator: dash, into: buffer, at: &offset)
            if let ext {
                buffer[offset] = dot
                offset += 1
                withUnsafeBytes(of: ext.packed.littleEndian) { bytes in
                    for index in 0..<ext.count { buffer[offset + index] = bytes[index] }
                }
                offset += ext.count
            }
            return offset
        }
    }

    private static let dash = UInt8(ascii: "-")
    private static let dot = UInt8(ascii: ".")

    private static func partLength(_ part: String?) -> Int {
        guard let part, !part.isEmpty else { return 0 }
        return 1 + part.utf8.count
    }

    /// Writes `separator` and `part` (nothing when `part` is nil or empty) at `offset`.
    private static func write(
        _ part: String?, separator: UInt8?, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: inout Int
    ) {
        guard let part, !part.isEmpty else { return }
        if let separator {
            buffer[offset] = separator
            offset += 1
        }
        let (_, end) = UnsafeMutableBufferPointer(rebasing: buffer[offset...]).initialize(from: part.utf8)
        offset += end
    }
}
