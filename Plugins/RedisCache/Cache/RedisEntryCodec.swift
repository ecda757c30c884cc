import Crypto
import Foundation
import ImageCore
import NIOCore

/// The Redis keys of one cache key: the entry and its fleet-coalescing lease, in one hash slot.
///
/// `<prefix>{<32 hex digits of SHA-256(v<format version>␤key)>}` and the same with `:lease`. Hashing bounds the
/// key length and hides URLs (which may carry tokens) from anyone listing keys; the key-format version
/// (``ImageCore/CacheKeyFormat/version``) in the hashed text makes entries written under an earlier key format
/// clean misses; the `{…}` hash tag puts both keys in one cluster slot, so they can be sent together.
struct RedisKeys: Sendable, Hashable {
    let entry: String
    let lease: String

    init(prefix: String, key: String) {
        let digest = SHA256.hash(data: Data("v\(CacheKeyFormat.version)\n\(key)".utf8))
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(32)
        for byte in digest.prefix(16) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        let hexText = String(decoding: hex, as: UTF8.self)
        entry = "\(prefix){\(hexText)}"
        lease = "\(entry):lease"
    }
}

/// The bytes of one Redis entry: a small header with the ``ImageCore/CacheEntryMetadata`` (as JSON), then the
/// image bytes as given.
///
/// Layout: `WIRC` (4 bytes), version 1 (1 byte), metadata length (UInt32, big-endian), metadata JSON, bytes.
/// The metadata keeps the original cache key, so an entry written for another key (a foreign writer using the
/// same prefix) is a miss, not a wrong image. Pure; any input decodes to an entry or nil, never traps.
enum RedisEntryCodec {
    static let magic: [UInt8] = Array("WIRC".utf8)
    static let version: UInt8 = 1
    static let headerLength = 9
    /// Metadata beyond this is refused (it is a few hundred bytes in practice).
    static let maxMetadataLength = 64 << 10

    static func encode(data: Data, metadata: CacheEntryMetadata) -> ByteBuffer {
        let json = (try? JSONEncoder().encode(metadata)) ?? Data("{}".utf8)
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerLength + json.count + data.count)
        buffer.writeBytes(magic)
        buffer.writeInteger(version)
        buffer.writeInteger(UInt32(json.count), endianness: .big)
        buffer.writeBytes(json)
        buffer.writeBytes(data)
        return buffer
    }

    /// The entry in `buffer` if it is well formed and was written for `key`.
    static func decode(_ buffer: ByteBuffer, key: String) -> (data: Data, metadata: CacheEntryMetadata)? {
        var buffer = buffer
        guard buffer.readableBytes >= headerLength, buffer.readBytes(length: 4) == magic,
            buffer.readInteger(as: UInt8.self) == version,
            let length = buffer.readInteger(endianness: .big, as: UInt32.self), Int(length) <= maxMetadataLength,
            let json = buffer.readBytes(length: Int(length)).map({ Data($0) }),
            let metadata = try? JSONDecoder().decode(CacheEntryMetadata.self, from: json),
            metadata.originalKey == key
        else { return nil }
        return (Data(buffer.readableBytesView), metadata)
    }
}
