import Foundation
import ImageCore

/// Why bytes are not a valid entry file; what ``DiskEntryCodec`` throws.
///
/// Every malformed, truncated, padded or hostile input maps to one of these cases; the decoder never traps and
/// never allocates more than the input it was given.
@_spi(Fuzzing) public enum DiskEntryCodecError: Error, Hashable, Sendable {
    /// Fewer bytes than the fixed 16-byte header.
    case tooShort(size: Int)
    /// The first four bytes are not `WIC1`.
    case badMagic
    /// The metadata block length is above ``DiskEntryCodec/maxMetadataSize``.
    case metadataTooLarge(length: UInt32)
    /// The body length is above the entry size limit the caller allows.
    case bodyTooLarge(length: UInt64, limit: Int)
    /// The file size differs from `16 + metadata + body` (truncated, padded, or a length that lies).
    case lengthMismatch(declared: UInt64, actual: Int)
    /// A field runs past the end of the metadata block.
    case truncatedField(String)
    /// The metadata block has bytes after its last field.
    case trailingBytes(count: Int)
    /// The body does not hash to the checksum in the header (torn by an in-place writer, or damaged).
    case bodyChecksumMismatch
    /// A string field is not valid UTF-8.
    case invalidText(String)
    /// A date field is NaN or infinite.
    case invalidDate(String)
    /// `maxAge` is negative.
    case invalidMaxAge(Int64)
    /// The entry belongs to another key than the one asked for (or names none).
    case foreignKey
}

/// The on-disk layout of one entry: a small binary header with the metadata, then the bytes as given.
///
/// ```
/// 0   4  magic "WIC1" (format version 1)
/// 4   4  metadata block length M, little-endian UInt32 (at most maxMetadataSize)
/// 8   8  body length B, little-endian UInt64
/// 16  M  metadata block: flags (1 byte), then present fields in order —
///        storedAt, expiresAt (Float64 seconds since 1970, finite), maxAge (Int64, ≥ 0),
///        originalKey, contentType, etag, lastModified (UInt32 length + UTF-8),
///        bodyChecksum (XXH64 of the body, UInt64; flag bit 7, written since this field exists)
/// 16+M B  body
/// ```
/// The file size must be exactly `16 + M + B`, so a truncated or padded file is detected without a checksum.
/// The header sits in the same file as the body, so one atomic rename publishes both. The access time is not in
/// the header: it is the file's modification time, which the cache sets itself (see ``DiskCache``).
///
/// Fuzzing: ``decode(_:maxBodySize:)`` (which also checks the body checksum) is the one entry point for
/// untrusted bytes, public under
/// `@_spi(Fuzzing) import DiskCache` (so a fuzz target in this package or in a separate one can call it); it
/// throws ``DiskEntryCodecError`` for anything but a valid entry and never traps.
@_spi(Fuzzing) public enum DiskEntryCodec {
    static let magic: [UInt8] = Array("WIC1".utf8)
    /// `magic` as the UInt32 its bytes load as.
    private static let magicWord = magic.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
    /// Bytes of the fixed part of the header.
    public static let fixedHeaderSize = 16
    /// Upper bound of the metadata block; a larger value means garbage.
    public static let maxMetadataSize = 1 << 20

    private enum Flag {
        static let storedAt: UInt8 = 1 << 0
        static let expiresAt: UInt8 = 1 << 1
        static let maxAge: UInt8 = 1 << 2
        static let originalKey: UInt8 = 1 << 3
        static let contentType: UInt8 = 1 << 4
        static let etag: UInt8 = 1 << 5
        static let lastModified: UInt8 = 1 << 6
        static let bodyChecksum: UInt8 = 1 << 7
    }

    /// The header (fixed part and metadata block) for a body of `bodyLength` bytes whose ``XXH64`` is
    /// `bodyChecksum`.
    ///
    /// Values the decoder would refuse are not written: a non-finite date or a negative `maxAge` is left out,
    /// so whatever this writes decodes again.
    /// - Throws: ``DiskEntryCodecError/metadataTooLarge(length:)`` when the strings (a huge key, say) make the
    ///   metadata block larger than ``maxMetadataSize``.
    static func header(for metadata: CacheEntryMetadata, bodyLength: Int, bodyChecksum: UInt64)
        throws(DiskEntryCodecError) -> [UInt8]
    {
        var block: [UInt8] = [0]
        var flags: UInt8 = 0
        if let storedAt = metadata.storedAt?.timeIntervalSince1970, storedAt.isFinite {
            flags |= Flag.storedAt
            append(storedAt.bitPattern, to: &block)
        }
        if let expiresAt = metadata.expiresAt?.timeIntervalSince1970, expiresAt.isFinite {
            flags |= Flag.expiresAt
            append(expiresAt.bitPattern, to: &block)
        }
        if let maxAge = metadata.maxAge, maxAge >= 0 {
            flags |= Flag.maxAge
            append(UInt64(truncatingIfNeeded: maxAge), to: &block)
        }
        let strings: [(UInt8, String?)] = [
            (Flag.originalKey, metadata.originalKey), (Flag.contentType, metadata.contentType),
            (Flag.etag, metadata.etag), (Flag.lastModified, metadata.lastModified),
        ]
        for (flag, value) in strings {
            guard let value else { continue }
            let count = value.utf8.count
            guard count <= maxMetadataSize - block.count else {
                throw .metadataTooLarge(length: UInt32(clamping: block.count + count))
            }
            flags |= flag
            append(UInt32(count), to: &block)
            block += value.utf8
        }
        guard block.count + 8 <= maxMetadataSize else {
            throw .metadataTooLarge(length: UInt32(clamping: block.count + 8))
        }
        flags |= Flag.bodyChecksum
        append(bodyChecksum, to: &block)
        block[0] = flags
        var header = magic
        header.reserveCapacity(fixedHeaderSize + block.count)
        append(UInt32(block.count), to: &header)
        append(UInt64(max(0, bodyLength)), to: &header)
        return header + block
    }

    /// Decodes the header of a whole entry file.
    ///
    /// - Parameters:
    ///   - bytes: the whole file.
    ///   - maxBodySize: bodies longer than this are refused (the cache's entry size limit).
    /// - Returns: the metadata (its `size` is the body length) and the offset where the body starts; the body
    ///   runs to the end of `bytes`.
    /// - Throws: ``DiskEntryCodecError`` for anything that is not exactly a valid entry.
    public static func decode(_ bytes: UnsafeRawBufferPointer, maxBodySize: Int = .max)
        throws(DiskEntryCodecError) -> (metadata: CacheEntryMetadata, bodyOffset: Int)
    {
        try decode(bytes, maxBodySize: maxBodySize, expectedKey: nil, verifiesChecksum: true)
    }

    /// ``decode(_:maxBodySize:)`` for the cache's reads: with `expectedKey`, the stored key must be exactly it
    /// (else ``DiskEntryCodecError/foreignKey``), compared as bytes and not copied into a new String; the body
    /// checksum, when the file has one, is checked only with `verifiesChecksum`.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, maxBodySize: Int, expectedKey: String?, verifiesChecksum: Bool
    ) throws(DiskEntryCodecError) -> (metadata: CacheEntryMetadata, bodyOffset: Int) {
        var metadata = CacheEntryMetadata()
        let offset = try decode(
            bytes, maxBodySize: maxBodySize, expectedKey: expectedKey, verifiesChecksum: verifiesChecksum,
            into: &metadata)
        return (metadata, offset)
    }

    /// The decoder, writing the fields it finds into `metadata` (the hit path fills its entry in place: the
    /// metadata is large, and every copy of it retains its strings). Returns the offset of the body.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, maxBodySize: Int, expectedKey: String?, verifiesChecksum: Bool,
        into metadata: inout CacheEntryMetadata
    ) throws(DiskEntryCodecError) -> Int {
        guard bytes.count >= fixedHeaderSize else { throw .tooShort(size: bytes.count) }
        guard bytes.loadUnaligned(as: UInt32.self) == magicWord else { throw .badMagic }
        var fixed = Reader(bytes: bytes, offset: 4)
        let rawBlockLength = try fixed.uint32("metadata length")
        let bodyLength = try fixed.uint64("body length")
        guard rawBlockLength <= UInt32(maxMetadataSize) else { throw .metadataTooLarge(length: rawBlockLength) }
        guard bodyLength <= UInt64(max(0, maxBodySize)) else {
            throw .bodyTooLarge(length: bodyLength, limit: maxBodySize)
        }
        // Both lengths are now small enough that these sums cannot overflow.
        let blockLength = Int(rawBlockLength)
        let declared = UInt64(fixedHeaderSize + blockLength) + bodyLength
        guard declared == UInt64(bytes.count) else { throw .lengthMismatch(declared: declared, actual: bytes.count) }

        var reader = Reader(
            bytes: UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderSize..<fixedHeaderSize + blockLength]))
        let flags = try reader.byte("flags")
        if flags & Flag.storedAt != 0 { metadata.storedAt = try reader.date("storedAt") }
        if flags & Flag.expiresAt != 0 { metadata.expiresAt = try reader.date("expiresAt") }
        if flags & Flag.maxAge != 0 {
            let value = Int64(bitPattern: try reader.uint64("maxAge"))
            guard value >= 0 else { throw .invalidMaxAge(value) }
            metadata.maxAge = Int(truncatingIfNeeded: value)
        }
        if let expectedKey {
            guard flags & Flag.originalKey != 0, try reader.matches("originalKey", expectedKey) else {
                throw .foreignKey
            }
            metadata.originalKey = expectedKey
        } else if flags & Flag.originalKey != 0 {
            metadata.originalKey = try reader.string("originalKey")
        }
        if flags & Flag.contentType != 0 { metadata.contentType = try reader.string("contentType") }
        if flags & Flag.etag != 0 { metadata.etag = try reader.string("etag") }
        if flags & Flag.lastModified != 0 { metadata.lastModified = try reader.string("lastModified") }
        let checksum = flags & Flag.bodyChecksum != 0 ? try reader.uint64("bodyChecksum") : nil
        guard reader.remaining == 0 else { throw .trailingBytes(count: reader.remaining) }
        let bodyOffset = fixedHeaderSize + blockLength
        if verifiesChecksum, let checksum {
            guard XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[bodyOffset...])) == checksum else {
                throw .bodyChecksumMismatch
            }
        }
        metadata.size = Int(bodyLength)
        return bodyOffset
    }

    /// The metadata block length a fixed header declares, or nil when `fixedHeader` is not one (bad magic, a
    /// block over ``maxMetadataSize``).
    static func metadataLength(fixedHeader: [UInt8]) -> Int? {
        guard fixedHeader.count >= fixedHeaderSize, fixedHeader.starts(with: magic) else { return nil }
        let length = fixedHeader.withUnsafeBytes {
            UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        }
        return length <= UInt32(maxMetadataSize) ? Int(length) : nil
    }

    /// True when `header` (the fixed part and the whole metadata block of a file of `fileSize` bytes) is valid and
    /// records `key` as the entry's key. The body is not checked.
    static func headerNames(_ key: String, header: [UInt8], fileSize: Int) -> Bool {
        header.withUnsafeBytes { raw in
            guard raw.count >= fixedHeaderSize else { return false }
            let bodyLength = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            guard let blockLength = metadataLength(fixedHeader: Array(raw.prefix(fixedHeaderSize))),
                raw.count == fixedHeaderSize + blockLength, fileSize >= raw.count,
                bodyLength == UInt64(fileSize - raw.count)
            else { return false }
            // Decode the header as a file with an empty body: every field is checked the same way.
            var copy = Array(raw)
            copy.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(0), toByteOffset: 8, as: UInt64.self) }
            return copy.withUnsafeBytes {
                (try? decode($0, maxBodySize: .max, expectedKey: key, verifiesChecksum: false)) != nil
            }
        }
    }

    /// The metadata and body offset of a valid entry, or nil (for callers that only need yes or no).
    static func parse(_ bytes: UnsafeRawBufferPointer, maxBodySize: Int = .max) -> (
        metadata: CacheEntryMetadata, bodyOffset: Int
    )? {
        try? decode(bytes, maxBodySize: maxBodySize)
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// A bounds-checked little-endian cursor; every read checks the remaining length first.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var remaining: Int { bytes.count - offset }

        @inline(__always)
        mutating func byte(_ field: String) throws(DiskEntryCodecError) -> UInt8 {
            guard remaining >= 1 else { throw .truncatedField(field) }
            defer { offset += 1 }
            return bytes[offset]
        }

        @inline(__always)
        mutating func uint32(_ field: String) throws(DiskEntryCodecError) -> UInt32 {
            try integer(UInt32.self, field)
        }

        @inline(__always)
        mutating func uint64(_ field: String) throws(DiskEntryCodecError) -> UInt64 {
            try integer(UInt64.self, field)
        }

        @inline(__always)
        private mutating func integer<T: FixedWidthInteger>(_ type: T.Type, _ field: String)
            throws(DiskEntryCodecError) -> T
        {
            let size = MemoryLayout<T>.size
            guard remaining >= size else { throw .truncatedField(field) }
            var value: T = 0
            withUnsafeMutableBytes(of: &value) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + size]))
            }
            offset += size
            return T(littleEndian: value)
        }

        @inline(__always)
        mutating func date(_ field: String) throws(DiskEntryCodecError) -> Date {
            let seconds = Double(bitPattern: try uint64(field))
            guard seconds.isFinite else { throw .invalidDate(field) }
            return Date(timeIntervalSince1970: seconds)
        }

        /// Reads a string field and tells whether its bytes are exactly `expected`'s UTF-8.
        @inline(__always)
        mutating func matches(_ field: String, _ expected: String) throws(DiskEntryCodecError) -> Bool {
            let length = try uint32(field)
            guard UInt64(length) <= UInt64(remaining) else { throw .truncatedField(field) }
            let count = Int(length)
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
            offset += count
            var expected = expected
            return expected.withUTF8 { utf8 in
                utf8.count == count && (count == 0 || memcmp(utf8.baseAddress!, slice.baseAddress!, count) == 0)
            }
        }

        mutating func string(_ field: String) throws(DiskEntryCodecError) -> String {
            let length = try uint32(field)
            // `remaining` fits in Int and `length` is a UInt32: compare in UInt64 so nothing can overflow.
            guard UInt64(length) <= UInt64(remaining) else { throw .truncatedField(field) }
            let count = Int(length)
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
            offset += count
            guard let value = String(validating: slice, as: UTF8.self) else {
                throw .invalidText(field)
            }
            return value
        }
    }
}
