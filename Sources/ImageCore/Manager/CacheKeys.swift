import Foundation

/// Builds cache keys: one documented, deterministic format that is injective by construction.
///
/// A key is a sequence of tokens separated by single spaces. The first token is the base — the cache-key
/// filter's string, else the URL's absolute string — and each further token is one part, `name(value)`, in this
/// order and only when it applies: `partition(<key>)` (``ImageContextOption/cachePartitionKey``),
/// `thumbnail(WxH,fit|fill[,up])`, `orientation(raw)`, `frames(first)`, `decode(<parts>)` (decode options added by
/// plugins, such as a custom coder's options), `transform(<transformerKey>)`. When a part was added and the URL
/// path has a short alphanumeric extension (1–5 characters), a last token `.<ext>` repeats it, so the key still
/// ends in the image's extension.
///
/// In the base and in every value, `\` is written `\\`, a space `\s` and every non-ASCII byte `\xHH`, so no token
/// contains an unescaped space and each key splits back into exactly one (base, parts) tuple: no URL, however it is
/// spelled, can produce the key of another URL, partition or option set. Keys are ASCII, so two spellings that
/// Swift's `String` equality calls equal (Unicode canonical equivalence: `é` and `e` + combining acute) are
/// different keys for every level alike — a memory level's dictionary and a disk level's file names agree. A URL's
/// absolute string is ASCII and never contains a space or a backslash, so a plain load's key is its URL verbatim
/// (as in earlier versions); a filter that returns other characters gets them escaped. The original key is the
/// base plus the partition part:
///
///     https://h/a.png                                                          (no part)
///     https://h/a.png thumbnail(256x256,fit) transform(resize(100x100,aspectFit,lanczos3)) .png
///     https://h/a.png partition(tenant-7) .png                                 (its original key)
///
/// ``CacheKeyFormat/version`` names this format; caches that derive names from keys (files, Redis keys) mix it
/// into the name, so entries written under an earlier format are clean misses.
enum CacheKeys {
    /// The parts of a key besides its base, each nil or false when it does not apply.
    struct Parts {
        var partition: String?
        var thumbnail: PixelSize?
        var fill = false
        /// The thumbnail may be larger than its source (``ImageDecodeOptions/allowsThumbnailUpscaling``).
        var scaleUp = false
        var rawOrientation = false
        var firstFrame = false
        var decode: String?
        var transformer: String?

        /// True when no part applies (the key is the base alone).
        var isEmpty: Bool {
            partition == nil && thumbnail == nil && !rawOrientation && !firstFrame && decode == nil
                && transformer == nil
        }
    }

    /// The thumbnail value, e.g. `256x256,fit`, or `256x256,fit,up` for a thumbnail that may scale up.
    static func thumbnailValue(_ size: PixelSize, fill: Bool, scaleUp: Bool) -> String {
        "\(size.width)x\(size.height),\(fill ? "fill" : "fit")\(scaleUp ? ",up" : "")"
    }

    /// The key for `base` and `parts`, with `url`'s short extension last when a part was added.
    ///
    /// Written in one pass into a buffer of the exact size: one allocation, no appends.
    static func key(base: String, url: URL, absoluteString: String, parts: Parts) -> String {
        let baseLength = escapedLength(base)
        guard !parts.isEmpty else {
            return baseLength == base.utf8.count ? base : escaped(base, length: baseLength)
        }
        let thumbnail = parts.thumbnail.map { thumbnailValue($0, fill: parts.fill, scaleUp: parts.scaleUp) }
        var length = baseLength
        length += partLength("partition", parts.partition)
        length += partLength("thumbnail", thumbnail)
        length += parts.rawOrientation ? partLength("orientation", "raw") : 0
        length += parts.firstFrame ? partLength("frames", "first") : 0
        length += partLength("decode", parts.decode)
        length += partLength("transform", parts.transformer)
        let ext = URLScan.shortExtension(of: url, absoluteString: absoluteString)
        length += ext.map { 2 + $0.count } ?? 0
        return String(unsafeUninitializedCapacity: length) { buffer in
            var writer = Writer(buffer: buffer)
            writer.writeEscaped(base)
            writer.writePart("partition", parts.partition)
            writer.writePart("thumbnail", thumbnail)
            if parts.rawOrientation { writer.writePart("orientation", "raw") }
            if parts.firstFrame { writer.writePart("frames", "first") }
            writer.writePart("decode", parts.decode)
            writer.writePart("transform", parts.transformer)
            if let ext {
                writer.write(space)
                writer.write(dot)
                withUnsafeBytes(of: ext.packed.littleEndian) { bytes in
                    for index in 0..<ext.count { writer.write(bytes[index]) }
                }
            }
            return writer.offset
        }
    }

    /// A composite key of tagged fields, injective the same way (escaped values, one space between fields): the
    /// manager's job keys, so two loads share a job only when every field is equal.
    static func composite(_ fields: [(tag: String, value: String)]) -> String {
        var result = ""
        for (index, field) in fields.enumerated() {
            if index > 0 { result.append(" ") }
            result.append(field.tag)
            result.append("(")
            result.append(escaped(field.value, length: escapedLength(field.value)))
            result.append(")")
        }
        return result
    }

    private static let space = UInt8(ascii: " ")
    private static let backslash = UInt8(ascii: "\\")
    private static let dot = UInt8(ascii: ".")
    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// The length of `text` once escaped (its own length when nothing needs escaping).
    static func escapedLength(_ text: String) -> Int {
        let scan = { (bytes: UnsafeBufferPointer<UInt8>) -> Int in
            var extra = 0
            for byte in bytes {
                if byte >= 0x80 {
                    extra += 3
                } else if byte == space || byte == backslash {
                    extra += 1
                }
            }
            return bytes.count + extra
        }
        if let length = text.utf8.withContiguousStorageIfAvailable(scan) { return length }
        var copy = text
        copy.makeContiguousUTF8()
        return copy.utf8.withContiguousStorageIfAvailable(scan) ?? 0
    }

    /// `text` escaped: `\` as `\\`, a space as `\s`, a non-ASCII byte as `\xHH`.
    static func escaped(_ text: String, length: Int) -> String {
        String(unsafeUninitializedCapacity: length) { buffer in
            var writer = Writer(buffer: buffer)
            writer.writeEscaped(text)
            return writer.offset
        }
    }

    /// The bytes of ` name(value)`, nothing when `value` is nil.
    private static func partLength(_ name: StaticString, _ value: String?) -> Int {
        guard let value else { return 0 }
        return 1 + name.utf8CodeUnitCount + 2 + escapedLength(value)
    }

    private struct Writer {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var offset = 0

        mutating func write(_ byte: UInt8) {
            buffer[offset] = byte
            offset += 1
        }

        mutating func writeEscaped(_ text: String) {
            for byte in text.utf8 {
                switch byte {
                case CacheKeys.backslash:
                    write(CacheKeys.backslash)
                    write(CacheKeys.backslash)
                case CacheKeys.space:
                    write(CacheKeys.backslash)
                    write(UInt8(ascii: "s"))
                case 0x80...:
                    write(CacheKeys.backslash)
                    write(UInt8(ascii: "x"))
                    write(CacheKeys.hexDigits[Int(byte >> 4)])
                    write(CacheKeys.hexDigits[Int(byte & 0x0F)])
                default: write(byte)
                }
            }
        }

        mutating func writePart(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            write(CacheKeys.space)
            name.withUTF8Buffer { for byte in $0 { write(byte) } }
            write(UInt8(ascii: "("))
            writeEscaped(value)
            write(UInt8(ascii: ")"))
        }
    }
}

/// The version of the cache-key format (see ``ImageManager/cacheKey(for:options:context:)``).
///
/// Caches that derive names from keys (DiskCache's file names, RedisCache's keys) mix it into the name, so an
/// entry written under an earlier key format is a clean miss rather than an entry read under another meaning.
public enum CacheKeyFormat {
    /// 2: space-separated, escaped `name(value)` parts (injective); 1 joined parts with `-`, unescaped.
    public static let version = 2
}
