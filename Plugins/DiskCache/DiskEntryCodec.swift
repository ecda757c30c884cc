import Foundation
import ImageCore

/// The on-disk layout of one entry: a small binary header with the metadata, then the bytes as given.
///
/// ```
/// 0   4  magic "WIC1" (format version 1)
/// 4   4  metadata block length M, little-endian UInt32
/// 8   8  body length B, little-endian UInt64
/// 16  M  metadata block: flags (1 byte), then present fields in order —
///        storedAt, expiresAt (Float64 seconds since 1970), maxAge (Int64),
///        originalKey, contentType, etag, lastModified (UInt32 length + UTF-8)
/// 16+M B  body
/// ```
/// The file size must be exactly `16 + M + B`, so a truncated or padded file is detected without a checksum.
/// The header sits in the same file as the body, so one atomic rename publishes both. The access time is not in
/// the header: it is the file's modification time, which the cache sets itself (see ``DiskCache``).
enum DiskEntryCodec {
    static let magic: [UInt8] = Array("WIC1".utf8)
    static let fixedHeaderSize = 16
    /// Upper bound of the metadata block; a larger value means garbage.
    static let maxMetadataSize = 1 << 20

    private enum Flag {
        static let storedAt: UInt8 = 1 << 0
        static let expiresAt: UInt8 = 1 << 1
        static let maxAge: UInt8 = 1 << 2
        static let originalKey: UInt8 = 1 << 3
        static let contentType: UInt8 = 1 << 4
        static let etag: UInt8 = 1 << 5
        static let lastModified: UInt8 = 1 << 6
    }

    /// The header (fixed part and metadata block) for a body of `bodyLength` bytes.
    static func header(for metadata: CacheEntryMetadata, bodyLength: Int) -> [UInt8] {
        var block: [UInt8] = [0]
        var flags: UInt8 = 0
        if let storedAt = metadata.storedAt {
            flags |= Flag.storedAt
            append(storedAt.timeIntervalSince1970.bitPattern, to: &block)
        }
        if let expiresAt = metadata.expiresAt {
            flags |= Flag.expiresAt
            append(expiresAt.timeIntervalSince1970.bitPattern, to: &block)
        }
        if let maxAge = metadata.maxAge {
            flags |= Flag.maxAge
            append(UInt64(bitPattern: Int64(maxAge)), to: &block)
        }
        let strings: [(UInt8, String?)] = [
            (Flag.originalKey, metadata.originalKey), (Flag.contentType, metadata.contentType),
            (Flag.etag, metadata.etag), (Flag.lastModified, metadata.lastModified),
        ]
        for (flag, value) in strings {
            guard let value else { continue }
            flags |= flag
            let utf8 = Array(value.utf8)
            append(UInt32(utf8.count), to: &block)
            block += utf8
        }
        block[0] = flags
        var header = magic
        append(UInt32(block.count), to: &header)
        append(UInt64(bodyLength), to: &header)
        return header + block
    }

    /// Parses the header of a whole entry file of `fileSize` bytes; nil when it is not a valid entry.
    ///
    /// - Returns: the metadata and the offset where the body starts (the body runs to the end of the file).
    static func parse(_ bytes: UnsafeRawBufferPointer) -> (metadata: CacheEntryMetadata, bodyOffset: Int)? {
        guard bytes.count >= fixedHeaderSize, bytes.prefix(4).elementsEqual(magic) else { return nil }
        var reader = Reader(bytes: bytes, offset: 4)
        guard let blockLength = reader.uint32().map(Int.init), blockLength <= maxMetadataSize,
            let bodyLength = reader.uint64(), bodyLength <= UInt64(Int.max),
            fixedHeaderSize + blockLength <= bytes.count,
            bytes.count - fixedHeaderSize - blockLength == Int(bodyLength)
        else { return nil }
        reader = Reader(bytes: UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderSize..<fixedHeaderSize + blockLength]))
        guard let flags = reader.byte() else { return nil }
        var metadata = CacheEntryMetadata()
        if flags & Flag.storedAt != 0 {
            guard let bits = reader.uint64() else { return nil }
            metadata.storedAt = Date(timeIntervalSince1970: Double(bitPattern: bits))
        }
        if flags & Flag.expiresAt != 0 {
            guard let bits = reader.uint64() else { return nil }
            metadata.expiresAt = Date(timeIntervalSince1970: Double(bitPattern: bits))
        }
        if flags & Flag.maxAge != 0 {
            guard let bits = reader.uint64() else { return nil }
            metadata.maxAge = Int(truncatingIfNeeded: Int64(bitPattern: bits))
        }
        for flag in [Flag.originalKey, Flag.contentType, Flag.etag, Flag.lastModified] where flags & flag != 0 {
            guard let value = reader.string() else { return nil }
            switch flag {
            case Flag.originalKey: metadata.originalKey = value
            case Flag.contentType: metadata.contentType = value
            case Flag.etag: metadata.etag = value
            default: metadata.lastModified = value
            }
        }
        guard reader.isAtEnd else { return nil }
        metadata.size = Int(bodyLength)
        return (metadata, fixedHeaderSize + blockLength)
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// A bounds-checked little-endian cursor.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func uint32() -> UInt32? { integer(UInt32.self) }
        mutating func uint64() -> UInt64? { integer(UInt64.self) }

        private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard bytes.count - offset >= size else { return nil }
            var value: T = 0
            withUnsafeMutableBytes(of: &value) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + size]))
            }
            offset += size
            return T(littleEndian: value)
        }

        mutating func string() -> String? {
            guard let length = uint32().map(Int.init), bytes.count - offset >= length else { return nil }
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
        }
    }
}
