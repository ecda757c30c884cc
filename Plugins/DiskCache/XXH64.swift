/// XXH64 (xxHash, 64-bit, seed 0): the body checksum of an entry file.
///
/// Not cryptographic: it detects torn and damaged bodies, not forgeries (anyone who can write the cache
/// directory can write a valid entry anyway). Pure and thread-safe.
enum XXH64 {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    @inline(__always)
    private static func rotl(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        rotl(accumulator &+ input &* p2, 31) &* p1
    }

    @inline(__always)
    private static func merge(_ accumulator: UInt64, _ value: UInt64) -> UInt64 {
        (accumulator ^ round(0, value)) &* p1 &+ p4
    }

    /// The hash of `bytes`.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let count = bytes.count
        guard let base = bytes.baseAddress else { return avalanche(p5) }
        var offset = 0
        var hash: UInt64
        if count >= 32 {
            var v1 = p1 &+ p2
            var v2 = p2
            var v3: UInt64 = 0
            var v4 = 0 &- p1
            while offset + 32 <= count {
                v1 = round(v1, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                v2 = round(v2, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
                v3 = round(v3, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)))
                v4 = round(v4, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)))
                offset += 32
            }
            hash = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            hash = merge(hash, v1)
            hash = merge(hash, v2)
            hash = merge(hash, v3)
            hash = merge(hash, v4)
        } else {
            hash = p5
        }
        hash &+= UInt64(count)
        while offset + 8 <= count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            hash ^= round(0, word)
            hash = rotl(hash, 27) &* p1 &+ p4
            offset += 8
        }
        if offset + 4 <= count {
            let word = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            hash ^= word &* p1
            hash = rotl(hash, 23) &* p2 &+ p3
            offset += 4
        }
        while offset < count {
            hash ^= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) &* p5
            hash = rotl(hash, 11) &* p1
            offset += 1
        }
        return avalanche(hash)
    }

    private static func avalanche(_ value: UInt64) -> UInt64 {
        var hash = value
        hash ^= hash >> 33
        hash &*= p2
        hash ^= hash >> 29
        hash &*= p3
        hash ^= hash >> 32
        return hash
    }
}
