/// BLAKE3 in keyed mode with the default 32-byte output: the digest that names entry files.
///
/// Why BLAKE3: names must be collision-resistant (a URL an attacker chooses must not share a file with another
/// key), and the hash runs on every disk hit. BLAKE3 is a cryptographic hash (128-bit collision resistance at
/// this output size) that needs about a third of SHA-256's operations per block, and this implementation runs
/// on the stack with no allocation. Keyed mode with a fixed key separates the names of this format version from
/// any other use of the hash at no cost.
///
/// Follows the specification's reference implementation (chunks of 1,024 bytes, blocks of 64, a stack of chunk
/// chaining values merged as a binary tree); checked against the official test vectors. Pure and thread-safe.
enum BLAKE3 {
    /// Eight little-endian words: a key, a chaining value or a digest.
    typealias Words = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    private static let iv: Words = (
        0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A, 0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19
    )
    private static let chunkStart: UInt32 = 1 << 0
    private static let chunkEnd: UInt32 = 1 << 1
    private static let parent: UInt32 = 1 << 2
    private static let root: UInt32 = 1 << 3
    private static let keyedHash: UInt32 = 1 << 4
    private static let chunkLength = 1024
    private static let blockLength = 64

    /// The 32-byte key (as words) for `key`, which must be exactly 32 bytes.
    static func keyWords(_ key: [UInt8]) -> Words {
        precondition(key.count == 32, "a BLAKE3 key is 32 bytes")
        func word(_ index: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(key[index * 4 + $1]) << (8 * UInt32($1)) }
        }
        return (word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7))
    }

    /// The keyed hash of `input` (32 bytes, as eight little-endian words).
    static func keyedHash(_ input: UnsafeRawBufferPointer, key: Words) -> Words {
        let count = input.count
        // Most keys fit one chunk: no stack of chaining values at all.
        guard count > chunkLength else { return finish(input, from: 0, chunk: 0, key: key, stack: nil, depth: 0) }
        // Full chunks before the last one go to a stack of chaining values: one entry per bit of their count.
        let fullChunks = (count - 1) / chunkLength
        let capacity = Int.bitWidth - fullChunks.leadingZeroBitCount + 1
        return withUnsafeTemporaryAllocation(of: Words.self, capacity: capacity) { stack in
            var depth = 0
            var chunk: UInt64 = 0
            var offset = 0
            while count - offset > chunkLength {
                var cv = chunkChainingValue(input.baseAddress! + offset, count: chunkLength, counter: chunk, key: key)
                chunk += 1
                // Merge completed subtrees: one merge per trailing zero bit of the number of chunks so far.
                var total = chunk
                while total & 1 == 0 {
                    depth -= 1
                    cv = compress(
                        cv: key, block: join(stack[depth], cv), counter: 0, length: 64, flags: keyedHash | parent)
                    total >>= 1
                }
                stack[depth] = cv
                depth += 1
                offset += chunkLength
            }
            return finish(input, from: offset, chunk: chunk, key: key, stack: stack, depth: depth)
        }
    }

    /// The last chunk (1 to 1,024 bytes from `offset`, or none for empty input), then the merges up the stack of
    /// `depth` chaining values, the last compression with the root flag.
    @inline(__always)
    private static func finish(
        _ input: UnsafeRawBufferPointer, from start: Int, chunk: UInt64, key: Words,
        stack: UnsafeMutableBufferPointer<Words>?, depth: Int
    ) -> Words {
        let count = input.count
        var offset = start
        var cv = key
        var blockFlags = keyedHash | chunkStart
        while count - offset > blockLength {
            cv = compress(
                cv: cv, block: load(input.baseAddress! + offset, count: blockLength), counter: chunk, length: 64,
                flags: blockFlags)
            blockFlags = keyedHash
            offset += blockLength
        }
        let last = count - offset
        let lastBlock = last == 0 ? zeroBlock : load(input.baseAddress! + offset, count: last)
        let lastFlags = blockFlags | chunkEnd
        guard let stack, depth > 0 else {
            return compress(cv: cv, block: lastBlock, counter: chunk, length: UInt32(last), flags: lastFlags | root)
        }
        var right = compress(cv: cv, block: lastBlock, counter: chunk, length: UInt32(last), flags: lastFlags)
        var level = depth
        while level > 1 {
            level -= 1
            right = compress(
                cv: key, block: join(stack[level], right), counter: 0, length: 64, flags: keyedHash | parent)
        }
        return compress(cv: key, block: join(stack[0], right), counter: 0, length: 64, flags: keyedHash | parent | root)
    }

    /// The chaining value of one full, non-final chunk.
    private static func chunkChainingValue(_ bytes: UnsafeRawPointer, count: Int, counter: UInt64, key: Words)
        -> Words
    {
        var cv = key
        var offset = 0
        while offset < count {
            var flags = keyedHash
            if offset == 0 { flags |= chunkStart }
            if offset + blockLength == count { flags |= chunkEnd }
            cv = compress(
                cv: cv, block: load(bytes + offset, count: blockLength), counter: counter, length: 64, flags: flags)
            offset += blockLength
        }
        return cv
    }

    /// Sixteen message words.
    typealias Block = (
        UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
        UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32
    )

    private static let zeroBlock: Block = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    private static func join(_ left: Words, _ right: Words) -> Block {
        (
            left.0, left.1, left.2, left.3, left.4, left.5, left.6, left.7,
            right.0, right.1, right.2, right.3, right.4, right.5, right.6, right.7
        )
    }

    /// Loads up to 64 bytes as little-endian words, zero-padded.
    @inline(__always)
    private static func load(_ bytes: UnsafeRawPointer, count: Int) -> Block {
        var block = zeroBlock
        withUnsafeMutableBytes(of: &block) { raw in
            raw.baseAddress!.copyMemory(from: bytes, byteCount: count)
        }
        #if _endian(big)
            block = (
                block.0.byteSwapped, block.1.byteSwapped, block.2.byteSwapped, block.3.byteSwapped,
                block.4.byteSwapped, block.5.byteSwapped, block.6.byteSwapped, block.7.byteSwapped,
                block.8.byteSwapped, block.9.byteSwapped, block.10.byteSwapped, block.11.byteSwapped,
                block.12.byteSwapped, block.13.byteSwapped, block.14.byteSwapped, block.15.byteSwapped
            )
        #endif
        return block
    }

    @inline(__always)
    private static func g(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: UInt32, _ y: UInt32
    ) {
        a = a &+ b &+ x
        d = (d ^ a).rotatedRight(16)
        c = c &+ d
        b = (b ^ c).rotatedRight(12)
        a = a &+ b &+ y
        d = (d ^ a).rotatedRight(8)
        c = c &+ d
        b = (b ^ c).rotatedRight(7)
    }

    /// The compression function, truncated to the eight words a chaining value or a 32-byte digest needs.
    @inline(__always)
    private static func compress(cv: Words, block: Block, counter: UInt64, length: UInt32, flags: UInt32) -> Words {
        var v0 = cv.0, v1 = cv.1, v2 = cv.2, v3 = cv.3, v4 = cv.4, v5 = cv.5, v6 = cv.6, v7 = cv.7
        var v8 = iv.0, v9 = iv.1, v10 = iv.2, v11 = iv.3
        var v12 = UInt32(truncatingIfNeeded: counter), v13 = UInt32(truncatingIfNeeded: counter >> 32)
        var v14 = length, v15 = flags
        let (m0, m1, m2, m3, m4, m5, m6, m7) = (block.0, block.1, block.2, block.3, block.4, block.5, block.6, block.7)
        let (m8, m9, m10, m11, m12, m13, m14, m15) = (
            block.8, block.9, block.10, block.11, block.12, block.13, block.14, block.15
        )
        // Seven rounds, unrolled, with the message schedule (the permutation applied r times) resolved here.
        // Round 1.
        g(&v0, &v4, &v8, &v12, m0, m1)
        g(&v1, &v5, &v9, &v13, m2, m3)
        g(&v2, &v6, &v10, &v14, m4, m5)
        g(&v3, &v7, &v11, &v15, m6, m7)
        g(&v0, &v5, &v10, &v15, m8, m9)
        g(&v1, &v6, &v11, &v12, m10, m11)
        g(&v2, &v7, &v8, &v13, m12, m13)
        g(&v3, &v4, &v9, &v14, m14, m15)
        // Round 2.
        g(&v0, &v4, &v8, &v12, m2, m6)
        g(&v1, &v5, &v9, &v13, m3, m10)
        g(&v2, &v6, &v10, &v14, m7, m0)
        g(&v3, &v7, &v11, &v15, m4, m13)
        g(&v0, &v5, &v10, &v15, m1, m11)
        g(&v1, &v6, &v11, &v12, m12, m5)
        g(&v2, &v7, &v8, &v13, m9, m14)
        g(&v3, &v4, &v9, &v14, m15, m8)
        // Round 3.
        g(&v0, &v4, &v8, &v12, m3, m4)
        g(&v1, &v5, &v9, &v13, m10, m12)
        g(&v2, &v6, &v10, &v14, m13, m2)
        g(&v3, &v7, &v11, &v15, m7, m14)
        g(&v0, &v5, &v10, &v15, m6, m5)
        g(&v1, &v6, &v11, &v12, m9, m0)
        g(&v2, &v7, &v8, &v13, m11, m15)
        g(&v3, &v4, &v9, &v14, m8, m1)
        // Round 4.
        g(&v0, &v4, &v8, &v12, m10, m7)
        g(&v1, &v5, &v9, &v13, m12, m9)
        g(&v2, &v6, &v10, &v14, m14, m3)
        g(&v3, &v7, &v11, &v15, m13, m15)
        g(&v0, &v5, &v10, &v15, m4, m0)
        g(&v1, &v6, &v11, &v12, m11, m2)
        g(&v2, &v7, &v8, &v13, m5, m8)
        g(&v3, &v4, &v9, &v14, m1, m6)
        // Round 5.
        g(&v0, &v4, &v8, &v12, m12, m13)
        g(&v1, &v5, &v9, &v13, m9, m11)
        g(&v2, &v6, &v10, &v14, m15, m10)
        g(&v3, &v7, &v11, &v15, m14, m8)
        g(&v0, &v5, &v10, &v15, m7, m2)
        g(&v1, &v6, &v11, &v12, m5, m3)
        g(&v2, &v7, &v8, &v13, m0, m1)
        g(&v3, &v4, &v9, &v14, m6, m4)
        // Round 6.
        g(&v0, &v4, &v8, &v12, m9, m14)
        g(&v1, &v5, &v9, &v13, m11, m5)
        g(&v2, &v6, &v10, &v14, m8, m12)
        g(&v3, &v7, &v11, &v15, m15, m1)
        g(&v0, &v5, &v10, &v15, m13, m3)
        g(&v1, &v6, &v11, &v12, m0, m10)
        g(&v2, &v7, &v8, &v13, m2, m6)
        g(&v3, &v4, &v9, &v14, m4, m7)
        // Round 7.
        g(&v0, &v4, &v8, &v12, m11, m15)
        g(&v1, &v5, &v9, &v13, m5, m0)
        g(&v2, &v6, &v10, &v14, m1, m9)
        g(&v3, &v7, &v11, &v15, m8, m6)
        g(&v0, &v5, &v10, &v15, m14, m10)
        g(&v1, &v6, &v11, &v12, m2, m12)
        g(&v2, &v7, &v8, &v13, m3, m4)
        g(&v3, &v4, &v9, &v14, m7, m13)
        return (v0 ^ v8, v1 ^ v9, v2 ^ v10, v3 ^ v11, v4 ^ v12, v5 ^ v13, v6 ^ v14, v7 ^ v15)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}
