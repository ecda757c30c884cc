import Foundation

/// Builds cache keys: one documented, deterministic format that is injective by construction.
///
/// A key is a sequence of tokens separated by single spaces. The first token is the base — the cache-key
/// filter's string, else the URL's absolute string — and each further token is one part, `name(value)`, in this
/// order and only when it applies: `partition(<key>)` (``ImageContextOption/cachePartitionKey``),
/// `thumbnail(WxH,fit|fill[,up])`, `orientation(raw)`, `frames(first)`, `decode(<parts>)` (decode options added by
/// plugins, such as a custom coder's options), `coder(<type>)` (a coder named in the context), `encode(<options>)`
/// (encode options the load names: how its derived entry is written), `transform(<transformerKey>)`. When a part was added and the URL
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
        /// The type of a coder the load names in its context (``ImageContextOption/imageCoder``).
        var coder: String?
        /// The encode options a load names (``ImageContextOption/imageEncodeOptions``): how its derived entry is written.
        var encode: String?
        var transformer: TransformerKeyPart?

        /// True when no part applies (the key is the base alone).
        var isEmpty: Bool {
            partition == nil && thumbnail == nil && !rawOrientation && !firstFrame && decode == nil && coder == nil
                && encode == nil && transformer == nil
        }
    }

    /// The thumbnail value, e.g. `256x256,fit`, or `256x256,fit,up` for a thumbnail that may scale up.
    static func thumbnailValue(_ size: PixelSize, fill: Bool, scaleUp: Bool) -> String {
        "\(size.width)x\(size.height),\(fill ? "fill" : "fit")\(scaleUp ? ",up" : "")"
    }

    /// The key of a load with no part: `base` itself when it needs no escape (a URL's absolute string never does),
    /// handed back without a copy.
    static func key(plainBase base: consuming String) -> String {
        let length = escapedLength(base)
        return length == base.utf8.count ? base : escaped(base, length: length)
    }

    /// The key for `base` and `parts`, with `url`'s short extension last when a part was added.
    ///
    /// Written in one pass into a buffer of the exact size: one allocation, no appends.
    static func key(base: String, url: URL, absoluteString: String, schemeEnd: Int? = nil, parts: Parts) -> String {
        guard !parts.isEmpty else { return key(plainBase: base) }
        let baseLength = escapedLength(base)
        // Every field read once into a local: the closure below then copies no optional out of `parts`.
        let partition = parts.partition
        let thumbnail = parts.thumbnail.map { thumbnailValue($0, fill: parts.fill, scaleUp: parts.scaleUp) }
        let (rawOrientation, firstFrame, decode, coder, encode) = (
            parts.rawOrientation, parts.firstFrame, parts.decode, parts.coder, parts.encode
        )
        let transformPart = parts.transformer?.part ?? ""
        var length = baseLength
        length += partLength("partition", partition)
        length += partLength("thumbnail", thumbnail)
        length += rawOrientation ? partLength("orientation", "raw") : 0
        length += firstFrame ? partLength("frames", "first") : 0
        length += partLength("decode", decode)
        length += partLength("coder", coder)
        length += partLength("encode", encode)
        length += transformPart.utf8.count
        let ext = URLScan.shortExtension(of: url, absoluteString: absoluteString, schemeEnd: schemeEnd)
        length += ext.map { 2 + $0.count } ?? 0
        return String(unsafeUninitializedCapacity: length) { buffer in
            var writer = Writer(buffer: buffer)
            // Most bases need no escape (a URL's absolute string has no space or backslash): one copy, no rescan.
            if baseLength == base.utf8.count { writer.writeVerbatim(base) } else { writer.writeEscaped(base) }
            if partition != nil { writer.writePart("partition", partition) }
            if thumbnail != nil { writer.writePart("thumbnail", thumbnail) }
            if rawOrientation { writer.writePart("orientation", "raw") }
            if firstFrame { writer.writePart("frames", "first") }
            if decode != nil { writer.writePart("decode", decode) }
            if coder != nil { writer.writePart("coder", coder) }
            if encode != nil { writer.writePart("encode", encode) }
            writer.writeVerbatim(transformPart)
            if let ext { writer.writeExtension(ext) }
            return writer.offset
        }
    }

    /// The key of a load whose base is its URL's absolute string and whose only part is `transformer`'s: what
    /// ``key(base:url:absoluteString:schemeEnd:parts:)`` makes for `Parts(transformer: transformer)`, without
    /// gathering the other parts (none apply) or copying the transformer's part out of it (each copy a reference
    /// count taken and dropped).
    ///
    /// The absolute string's bytes are reached once, for the escape check, the extension scan and the copy (each
    /// reach of a `String`'s bytes is a check of its representation and a call).
    static func key(absoluteString: String, url: URL, schemeEnd: Int?, transformer: TransformerKeyPart) -> String {
        withUTF8(absoluteString) { bytes in
            let baseLength = escapedLength(of: bytes)
            let ext = URLScan.shortExtension(
                of: url, bytes: bytes, absoluteString: absoluteString, schemeEnd: schemeEnd)
            let length = baseLength + transformer.part.utf8.count + (ext.map { 2 + $0.count } ?? 0)
            return String(unsafeUninitializedCapacity: length) { buffer in
                var writer = Writer(buffer: buffer)
                if baseLength == bytes.count {
                    writer.writeVerbatim(bytes)
                } else {
                    writer.writeEscaped(absoluteString)
                }
                writer.writeVerbatim(transformer.part)
                if let ext { writer.writeExtension(ext) }
                return writer.offset
            }
        }
    }

    /// The original key of a derived key (one with parts): its first token, the escaped base, then the partition
    /// part and the URL's extension when there is a partition. Equal to
    /// `key(base:url:absoluteString:parts: Parts(partition: partition))` for the base `key` was made from.
    static func originalKey(ofDerivedKey key: String, partition: String?, url: URL, absoluteString: String) -> String {
        withUTF8(key) { bytes -> String in
            // The base is escaped, so the first space ends it.
            let baseLength = bytes.firstIndex(of: space) ?? bytes.count
            let base = UnsafeBufferPointer(rebasing: bytes[..<baseLength])
            guard let partition else { return String(decoding: base, as: UTF8.self) }
            let ext = URLScan.shortExtension(of: url, absoluteString: absoluteString)
            let length = baseLength + partLength("partition", partition) + (ext.map { 2 + $0.count } ?? 0)
            return String(unsafeUninitializedCapacity: length) { buffer in
                var writer = Writer(buffer: buffer)
                writer.writeVerbatim(base)
                writer.writePart("partition", partition)
                if let ext { writer.writeExtension(ext) }
                return writer.offset
            }
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
    static func escapedLength(_ text: String) -> Int { withUTF8(text, escapedLength(of:)) }

    /// Runs `body` over `text`'s UTF-8 bytes: in place for a native string (no copy, no reference counting), else
    /// over a contiguous copy.
    @inline(__always)
    static func withUTF8<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = text
        return copy.withUTF8(body)
    }

    /// The length of `bytes` once escaped: eight bytes per step, and the bits of the bytes to escape counted only
    /// when there are some (rarely: a URL's absolute string has neither).
    static func escapedLength(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let start = bytes.baseAddress else { return 0 }
        let count = bytes.count
        guard count >= 8 else {
            var extra = 0
            for byte in bytes {
                if byte >= 0x80 {
                    extra += 3
                } else if byte == space || byte == backslash {
                    extra += 1
                }
            }
            return count + extra
        }
        let raw = UnsafeRawPointer(start)
        var extra = 0
        var index = 0
        while index + 8 <= count {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let mask = escapeMask(word)
            if mask != 0 { extra += escapeExtra(mask: mask, word: word) }
            index += 8
        }
        if index < count {
            // The last eight bytes, less the ones the loop counted (the lowest bytes, on a little-endian load).
            let shift = UInt64((8 - (count - index)) * 8)
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
            let mask = escapeMask(word) >> shift
            if mask != 0 { extra += escapeExtra(mask: mask, word: word >> shift) }
        }
        return count + extra
    }

    /// The bytes the escapes of one word add: one for a space or a backslash (`\s`, `\\`), three for a non-ASCII
    /// byte (`\xHH`). `mask` is the word's ``escapeMask(_:)``.
    @inline(__always)
    static func escapeExtra(mask: UInt64, word: UInt64) -> Int {
        mask.nonzeroBitCount &+ 2 &* (word & highBits).nonzeroBitCount
    }

    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of every byte of `word` that needs an escape (a space, a backslash, a non-ASCII byte), and no
    /// other bit.
    ///
    /// Exact per byte (no borrow crosses bytes): a byte equal to the pattern is zero after the xor, and only a zero
    /// byte keeps its high bit clear after adding 0x7F to its low seven bits and or-ing itself back in.
    @inline(__always)
    static func escapeMask(_ word: UInt64) -> UInt64 {
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let spaces = word ^ 0x2020_2020_2020_2020
        let backslashes = word ^ 0x5C5C_5C5C_5C5C_5C5C
        let spaceBytes = ~(((spaces & low7) &+ low7) | spaces | low7)
        let backslashBytes = ~(((backslashes & low7) &+ low7) | backslashes | low7)
        return spaceBytes | backslashBytes | (word & highBits)
    }

    /// The number of bytes at `start` (of `count`) before the first one that needs an escape.
    @inline(__always)
    static func plainPrefixLength(_ start: UnsafePointer<UInt8>, count: Int) -> Int {
        let raw = UnsafeRawPointer(start)
        var index = 0
        while index + 8 <= count {
            // Little-endian order: the first byte in memory is the lowest of the word.
            let mask = escapeMask(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            if mask != 0 { return index + mask.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < count, start[index] != space, start[index] != backslash, start[index] < 0x80 { index += 1 }
        return index
    }

    /// `text` escaped: `\` as `\\`, a space as `\s`, a non-ASCII byte as `\xHH`.
    static func escaped(_ text: String, length: Int) -> String {
        String(unsafeUninitializedCapacity: length) { buffer in
            var writer = Writer(buffer: buffer)
            writer.writeEscaped(text)
            return writer.offset
        }
    }

    /// The transformer's part, ` transform(<escaped key>)`.
    static func transformPart(_ transformerKey: String) -> String {
        let length = partLength("transform", transformerKey)
        return String(unsafeUninitializedCapacity: length) { buffer in
            var writer = Writer(buffer: buffer)
            writer.writePart("transform", transformerKey)
            return writer.offset
        }
    }

    /// The bytes of ` name(value)`, nothing when `value` is nil.
    @inline(__always)
    private static func partLength(_ name: StaticString, _ value: String?) -> Int {
        guard let value else { return 0 }
        return 1 + name.utf8CodeUnitCount + 2 + escapedLength(value)
    }

    /// Writes into a buffer whose size the caller computed exactly (so no write needs a bounds check).
    private struct Writer {
        let start: UnsafeMutablePointer<UInt8>?
        var offset = 0

        init(buffer: UnsafeMutableBufferPointer<UInt8>) { start = buffer.baseAddress }

        mutating func write(_ byte: UInt8) {
            start.unsafelyUnwrapped[offset] = byte
            offset += 1
        }

        /// Copies `text` as it is (it needs no escape, or is escaped already).
        mutating func writeVerbatim(_ text: String) {
            CacheKeys.withUTF8(text) { bytes in writeVerbatim(bytes) }
        }

        /// Copies `bytes` as they are.
        mutating func writeVerbatim(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress else { return }
            (start.unsafelyUnwrapped + offset).update(from: source, count: bytes.count)
            offset += bytes.count
        }

        /// ` .<ext>`.
        mutating func writeExtension(_ ext: URLScan.ShortExtension) {
            write(CacheKeys.space)
            write(CacheKeys.dot)
            var packed = ext.packed
            for _ in 0..<ext.count {
                write(UInt8(truncatingIfNeeded: packed))
                packed >>= 8
            }
        }

        /// Copies runs of bytes that need no escape at once, and escapes the others one by one.
        mutating func writeEscaped(_ text: String) {
            CacheKeys.withUTF8(text) { bytes in
                guard let source = bytes.baseAddress else { return }
                var index = 0
                while index < bytes.count {
                    let run = CacheKeys.plainPrefixLength(source + index, count: bytes.count - index)
                    (start.unsafelyUnwrapped + offset).update(from: source + index, count: run)
                    offset += run
                    index += run
                    guard index < bytes.count else { break }
                    write(CacheKeys.backslash)
                    let byte = source[index]
                    switch byte {
                    case CacheKeys.space: write(UInt8(ascii: "s"))
                    case CacheKeys.backslash: write(CacheKeys.backslash)
                    default:
                        write(UInt8(ascii: "x"))
                        write(CacheKeys.hexDigits[Int(byte >> 4)])
                        write(CacheKeys.hexDigits[Int(byte & 0x0F)])
                    }
                    index += 1
                }
            }
        }

        mutating func writePart(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            write(CacheKeys.space)
            name.withUTF8Buffer { name in
                guard let source = name.baseAddress else { return }
                (start.unsafelyUnwrapped + offset).update(from: source, count: name.count)
                offset += name.count
            }
            write(UInt8(ascii: "("))
            writeEscaped(value)
            write(UInt8(ascii: ")"))
        }
    }
}

/// A transformer's key and its cache-key part, ` transform(<escaped key>)`, made once when the transformer is put
/// in a context (or set as the manager's), so each load's key gets the part by one copy instead of escaping the key
/// again.
final class TransformerKeyPart: Sendable {
    /// ``Transformer/transformerKey``.
    let key: String
    /// ` transform(<key, escaped>)`.
    let part: String

    init(key: String) {
        self.key = key
        part = CacheKeys.transformPart(key)
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
