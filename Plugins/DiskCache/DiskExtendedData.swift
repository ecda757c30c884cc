import Foundation
import ImageCore

/// A caller's extended data larger than ``DiskCache/maxExtendedDataSize``: the cause of the `cacheFailure` that
/// a store or ``DiskCache/setExtendedData(_:forKey:)`` with it throws (the entry is left as it was).
public struct DiskCacheExtendedDataTooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    /// Bytes of the refused extended data.
    public let size: Int
    /// The limit, ``DiskCache/maxExtendedDataSize``.
    public let limit: Int

    /// Creates the error.
    public init(size: Int, limit: Int) {
        self.size = size
        self.limit = limit
    }

    /// "extended data of 5000 bytes exceeds the limit of 2048 bytes".
    public var description: String { "extended data of \(size) bytes exceeds the limit of \(limit) bytes" }
}

/// Where and how an entry's extended data is kept: in an extended attribute of the entry file, so it belongs to
/// that file (a store that replaces the entry replaces it too, atomically with the bytes, by the rename) and can
/// be changed or removed without rewriting the bytes — what SDWebImage's `SDDiskCache` does on Apple platforms.
///
/// The attribute holds `WXD1`, the length (UInt32) and the XXH64 (UInt64) of the data, little-endian, then the
/// data. The file's sticky bit (meaningless for regular files on Linux) tells a read that the attribute may
/// exist, so a hit on an entry without extended data costs no extra system call; it is set after the attribute
/// and cleared before the attribute is removed, so a reader never misses an attribute that is there.
enum DiskExtendedData {
    static let attributeName = "user.webimage.extended-data"
    /// The most bytes of extended data one entry may have: 2 KiB fits the single attribute block of ext4 with room
    /// for the system's own attributes (XFS, Btrfs and tmpfs allow more).
    static let maxSize = 2048
    static let headerSize = 16
    static let modeFlag = mode_t(S_ISVTX)
    private static let magic: [UInt8] = Array("WXD1".utf8)

    /// The attribute value for `data`.
    static func encode(_ data: Data) -> [UInt8] {
        var value = magic
        value.reserveCapacity(headerSize + data.count)
        withUnsafeBytes(of: UInt32(data.count).littleEndian) { value += $0 }
        withUnsafeBytes(of: data.withUnsafeBytes { XXH64.hash($0) }.littleEndian) { value += $0 }
        value += data
        return value
    }

    /// The data in an attribute value, or nil when the value is not one this cache wrote whole.
    static func decode(_ value: [UInt8]) -> Data? {
        guard value.count >= headerSize, value.count - headerSize <= maxSize, value.starts(with: magic) else {
            return nil
        }
        return value.withUnsafeBytes { raw -> Data? in
            let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            let checksum = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let body = UnsafeRawBufferPointer(rebasing: raw[headerSize...])
            guard length == body.count, XXH64.hash(body) == checksum else { return nil }
            return Data(body)
        }
    }

    /// Throws when `data` is over the limit.
    static func check(_ data: Data?, stage: ImageError.Stage) throws(ImageError) {
        guard let data, data.count > maxSize else { return }
        let error = DiskCacheExtendedDataTooLarge(size: data.count, limit: maxSize)
        throw ImageError(.cacheFailure, stage: stage, message: error.description, underlying: error)
    }
}
