import Foundation
import ImageCore
import ImageTestSupport
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// The entry-file header decoder against hostile input: every malformed header is a typed error, never a trap.
@Suite("DiskEntryCodec: hostile headers")
struct DiskEntryCodecTests {
    static let full = CacheEntryMetadata(
        originalKey: "https://example.com/a.png", contentType: "image/png", etag: "\"v1\"",
        lastModified: "Wed, 21 Oct 2015 07:28:00 GMT", maxAge: 3600,
        expiresAt: Date(timeIntervalSince1970: 1_800_000_000), storedAt: Date(timeIntervalSince1970: 1_700_000_000))

    static func file(_ metadata: CacheEntryMetadata = full, body: [UInt8] = [1, 2, 3]) throws -> [UInt8] {
        try DiskEntryCodec.header(
            for: metadata, bodyLength: body.count, bodyChecksum: body.withUnsafeBytes { XXH64.hash($0) }) + body
    }

    static func decode(_ bytes: [UInt8], maxBodySize: Int = .max) -> Result<CacheEntryMetadata, DiskEntryCodecError> {
        bytes.withUnsafeBytes { raw in
            Result { () throws(DiskEntryCodecError) in try DiskEntryCodec.decode(raw, maxBodySize: maxBodySize).metadata
            }
        }
    }

    static func error(_ bytes: [UInt8], maxBodySize: Int = .max) -> DiskEntryCodecError? {
        if case .failure(let error) = decode(bytes, maxBodySize: maxBodySize) { return error }
        return nil
    }

    /// A header with the given fixed fields followed by `block` and `body`.
    static func raw(metadataLength: UInt32, bodyLength: UInt64, block: [UInt8], body: [UInt8] = []) -> [UInt8] {
        var bytes = Array("WIC1".utf8)
        withUnsafeBytes(of: metadataLength.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: bodyLength.littleEndian) { bytes += $0 }
        return bytes + block + body
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    @Test("a full header round-trips")
    func roundTrip() throws {
        let metadata = try Self.decode(Self.file()).get()
        #expect(metadata.originalKey == Self.full.originalKey && metadata.etag == Self.full.etag)
        #expect(metadata.expiresAt == Self.full.expiresAt && metadata.maxAge == 3600 && metadata.size == 3)
        #expect(try Self.decode(Self.file(CacheEntryMetadata(), body: [])).get().size == 0)
    }

    @Test("every truncation and every padding of a valid file is a typed error")
    func truncationsAndPadding() throws {
        let valid = try Self.file()
        for cut in 0..<valid.count {
            let error = Self.error(Array(valid.prefix(cut)))
            #expect(error != nil, "cut at \(cut) decoded")
            if cut < 16 { #expect(error == .tooShort(size: cut)) }
        }
        #expect(Self.error(valid + [0]) == .lengthMismatch(declared: UInt64(valid.count), actual: valid.count + 1))
    }

    @Test("hostile fixed fields: bad magic, huge lengths, lengths that overflow")
    func hostileLengths() {
        #expect(Self.error(Array("WIC2".utf8) + [UInt8](repeating: 0, count: 20)) == .badMagic)
        #expect(
            Self.error(Self.raw(metadataLength: .max, bodyLength: 0, block: [0]))
                == .metadataTooLarge(length: .max))
        #expect(
            Self.error(Self.raw(metadataLength: 1 << 20 + 1, bodyLength: 0, block: [0]))
                == .metadataTooLarge(length: 1 << 20 + 1))
        // A body length that would overflow 16 + M + B in Int.
        #expect(
            Self.error(Self.raw(metadataLength: 1, bodyLength: .max, block: [0]))
                == .bodyTooLarge(length: .max, limit: .max))
        #expect(
            Self.error(Self.raw(metadataLength: 1 << 20, bodyLength: UInt64(Int.max), block: [0]))
                == .lengthMismatch(declared: UInt64(Int.max) + 16 + (1 << 20), actual: 17))
        #expect(
            Self.error(Self.raw(metadataLength: 1, bodyLength: UInt64(Int.max), block: [0]), maxBodySize: 1 << 20)
                == .bodyTooLarge(length: UInt64(Int.max), limit: 1 << 20))
        #expect(
            Self.error(Self.raw(metadataLength: 1, bodyLength: 5, block: [0], body: [1, 2]))
                == .lengthMismatch(declared: 22, actual: 19))
        #expect(Self.error(Self.raw(metadataLength: 0, bodyLength: 0, block: [])) == .truncatedField("flags"))
    }

    @Test("hostile metadata blocks: unknown flags, fields running past the block, strings longer than the block")
    func hostileBlocks() {
        func block(_ bytes: [UInt8]) -> [UInt8] {
            Self.raw(metadataLength: UInt32(bytes.count), bodyLength: 0, block: bytes)
        }
        #expect(Self.error(block([0x80])) == .truncatedField("bodyChecksum"))
        #expect(Self.error(block([0x01, 1, 2, 3])) == .truncatedField("storedAt"))
        #expect(Self.error(block([0x08] + Self.le(UInt32.max) + [65])) == .truncatedField("originalKey"))
        #expect(Self.error(block([0x08] + Self.le(UInt32(2)) + [65])) == .truncatedField("originalKey"))
        #expect(Self.error(block([0x08] + Self.le(UInt32(1)))) == .truncatedField("originalKey"))
        #expect(Self.error(block([0x08] + Self.le(UInt32(1)) + [65, 0])) == .trailingBytes(count: 1))
        #expect(Self.error(block([0x20] + Self.le(UInt32(2)) + [0xC3, 0x28])) == .invalidText("etag"))
        #expect(Self.error(block([0x02] + Self.le(Double.nan.bitPattern))) == .invalidDate("expiresAt"))
        #expect(Self.error(block([0x01] + Self.le(Double.infinity.bitPattern))) == .invalidDate("storedAt"))
        #expect(Self.error(block([0x04] + Self.le(UInt64(bitPattern: -1)))) == .invalidMaxAge(-1))
        #expect(Self.error(block([0x04] + Self.le(UInt64(bitPattern: Int64.min)))) == .invalidMaxAge(Int64.min))
        // Flags with every known field but an empty block after them.
        #expect(Self.error(block([0x7f])) == .truncatedField("storedAt"))
    }

    @Test("XXH64 matches the reference values")
    func xxh64() {
        func hash(_ text: String) -> UInt64 { Array(text.utf8).withUnsafeBytes { XXH64.hash($0) } }
        #expect(hash("") == 0xEF46_DB37_51D8_E999)
        #expect(hash("abc") == 0x44BC_2CF5_AD77_0999)
        // Every length from 0 to 100 takes the same path through the tail code as some reference length; a
        // one-byte change anywhere changes the hash.
        var bytes = [UInt8](repeating: 7, count: 100)
        let before = bytes.withUnsafeBytes { XXH64.hash($0) }
        for index in bytes.indices {
            bytes[index] ^= 1
            #expect(bytes.withUnsafeBytes { XXH64.hash($0) } != before)
            bytes[index] ^= 1
        }
    }

    @Test("a body that does not match its checksum is a typed error; a file without one still decodes")
    func checksum() throws {
        var valid = try Self.file(body: Array(repeating: 5, count: 1000))
        valid[valid.count - 10] ^= 0xff
        #expect(Self.error(valid) == .bodyChecksumMismatch)
        // The cache's hit path checks it only when asked.
        let unchecked = valid.withUnsafeBytes {
            try? DiskEntryCodec.decode($0, maxBodySize: .max, expectedKey: nil, verifiesChecksum: false)
        }
        #expect(unchecked != nil)
        // A version-1 file written before the checksum existed: flags without bit 7.
        let old = Self.raw(metadataLength: 1, bodyLength: 2, block: [0], body: [1, 2])
        #expect((try? Self.decode(old).get())?.size == 2)
    }

    @Test("the encoder never writes what the decoder refuses")
    func encoderStaysDecodable() throws {
        var odd = CacheEntryMetadata(originalKey: "k")
        odd.maxAge = -5
        odd.expiresAt = Date(timeIntervalSince1970: .nan)
        odd.storedAt = Date(timeIntervalSince1970: -.infinity)
        let decoded = try Self.decode(Self.file(odd)).get()
        #expect(decoded.maxAge == nil && decoded.expiresAt == nil && decoded.storedAt == nil)
        #expect(decoded.originalKey == "k")

        let hugeKey = String(repeating: "k", count: (1 << 20) + 1)
        #expect(throws: DiskEntryCodecError.self) {
            _ = try DiskEntryCodec.header(
                for: CacheEntryMetadata(originalKey: hugeKey), bodyLength: 1, bodyChecksum: 0)
        }
    }

    @Test("a key too large for the header fails the store with a typed error; the cache keeps working")
    func hugeKeyStore() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        // A data: URL as a cache key can be megabytes long.
        let key = "data:image/png;base64," + String(repeating: "A", count: 2 << 20)
        do {
            try cache.storeData(Data([1]), forKey: key)
            Issue.record("a 2 MiB key was stored, and would be unreadable")
        } catch {
            #expect(error.code == .cacheFailure && error.stage == .cacheStore)
            #expect(error.underlying is DiskEntryCodecError)
        }
        #expect(try cache.entry(forKey: key) == nil)
        #expect(DiskTest.files(in: cache.directory).isEmpty)
        try cache.storeData(Data([2]), forKey: "small")
        #expect(cache.data(forKey: "small") == Data([2]))
    }

    @Test("200,000 mutated and random headers: each decodes consistently or throws, none traps")
    func mutations() throws {
        let seeds = [
            try Self.file(), try Self.file(CacheEntryMetadata(), body: []),
            try Self.file(CacheEntryMetadata(originalKey: "k", etag: "e"), body: Array(repeating: 9, count: 40)),
        ]
        var random = SplitMix(seed: 7)
        var decoded = 0
        for round in 0..<200_000 {
            var bytes = seeds[round % seeds.count]
            switch random.next() % 4 {
            case 0:
                for _ in 0...(random.next() % 4) {
                    let index = Int(random.next() % UInt64(bytes.count))
                    bytes[index] = UInt8(truncatingIfNeeded: random.next())
                }
            case 1: bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count + 1))))
            case 2:
                // Overwrite a length field with an extreme value.
                let offset = [4, 8, 12, 17, 21][Int(random.next() % 5)]
                let value = [UInt64.max, UInt64(UInt32.max), 1 << 31, 0, UInt64(bytes.count)][Int(random.next() % 5)]
                for (index, byte) in Self.le(value).enumerated() where offset + index < bytes.count {
                    bytes[offset + index] = byte
                }
            default: bytes = (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            let count = bytes.count
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(DiskEntryCodecError) in try DiskEntryCodec.decode(raw, maxBodySize: 1 << 20) }
            }
            if case .success(let value) = result {
                decoded += 1
                #expect(value.bodyOffset >= 17 && value.bodyOffset <= count)
                #expect(value.metadata.size == count - value.bodyOffset)
            }
        }
        #expect(decoded > 0)
    }
}
