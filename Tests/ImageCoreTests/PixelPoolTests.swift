import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// ``PixelPool`` (issue 34 item 3): recycled pixel storage, bounded by its idle limit, trimmed when idle; and the
/// copy-on-write ``PixelBuffer`` over it.
@Suite("Pixel pool")
struct PixelPoolTests {
    @Test("every pooled size maps to the smallest class that holds it, with at most a quarter of slack")
    func sizeClassesAreTightAndOrdered() {
        var previous = 0
        for sizeClass in 0..<PixelPool.classCount {
            let size = PixelPool.classSize(sizeClass)
            #expect(size > previous && size % 4096 == 0)
            #expect(PixelPool.sizeClass(for: size) == sizeClass)
            #expect(PixelPool.sizeClass(for: size + 1) == (sizeClass + 1 < PixelPool.classCount ? sizeClass + 1 : nil))
            previous = size
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let count = Int.random(in: PixelPool.minimumPooledSize...(1 << 30), using: &random)
            let sizeClass = try! #require(PixelPool.sizeClass(for: count))
            let size = PixelPool.classSize(sizeClass)
            #expect(size >= count && Double(size) <= Double(count) * 1.25 + 1)
            if sizeClass > 0 { #expect(PixelPool.classSize(sizeClass - 1) < count) }
        }
        #expect(PixelPool.sizeClass(for: (1 << 30) + 1) == nil)
    }

    /// A plain model of the pool: per class, a stack of idle blocks (the most recent on top), a global release
    /// order for the limit, and the counters the pool reports. Random allocations, releases, trims and limit
    /// changes on a private pool must agree with it step by step: which block is reused, whether fresh memory is
    /// zero, what is idle and what was unmapped.
    @Test(
        "a random sequence of allocations, releases, trims and limit changes matches a plain model (seed printed)",
        .disabled(if: PixelPool.underAddressSanitizer, "under ASan every block is malloc'd, nothing is pooled"))
    func matchesAPlainModel() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("PixelPoolTests.matchesAPlainModel seed \(seed)")
        var random = SplitMix64(seed: seed)
        let limit = 6 << 20
        // No timed trim during the test: only the operations below change what is idle.
        let pool = PixelPool(byteLimit: limit, idleTrimDelay: .seconds(3600))
        defer { pool.trim() }
        struct Live {
            let block: PixelPool.Block
            let count: Int
            let mark: UInt8
            var base: UnsafeMutableRawPointer { block.base }
            var capacity: Int { block.capacity }
        }
        var live: [Live] = []
        var idle: [Int: [(address: UInt, order: Int, mark: UInt8?)]] = [:]
        var order = 0
        var byteLimit = limit
        var expected = PixelPool.Statistics(
            idleBytes: 0, idleBlocks: 0, liveBytes: 0, reused: 0, mapped: 0, unmapped: 0)
        let sizes = [1_000, 70_000, 100 << 10, 300_000, 1 << 20, (1 << 20) + 1, 3 << 20]
        func dropOldest(over limit: Int) {
            while expected.idleBytes > limit {
                let (sizeClass, _) = idle.filter { !$0.value.isEmpty }.min { $0.value[0].order < $1.value[0].order }!
                idle[sizeClass]!.removeFirst()
                expected.idleBytes -= PixelPool.classSize(sizeClass)
                expected.idleBlocks -= 1
                expected.unmapped += 1
            }
        }
        for step in 0..<2_000 {
            let choice = Int.random(in: 0..<100, using: &random)
            if choice < 50 || live.isEmpty {
                let count = sizes.randomElement(using: &random)!
                let block = try #require(pool.allocate(count))
                let mark = UInt8.random(in: 1...255, using: &random)
                if count >= PixelPool.minimumPooledSize {
                    let sizeClass = PixelPool.sizeClass(for: count)!
                    #expect(block.capacity == PixelPool.classSize(sizeClass), "step \(step), seed \(seed)")
                    expected.liveBytes += block.capacity
                    if let top = idle[sizeClass]?.popLast() {
                        #expect(UInt(bitPattern: block.base) == top.address, "not the last released, seed \(seed)")
                        #expect(!block.zeroed, "seed \(seed)")
                        // Warm: the pages still hold what the previous user wrote.
                        #expect(block.base.load(fromByteOffset: count - 1, as: UInt8.self) == top.mark)
                        expected.reused += 1
                        expected.idleBytes -= block.capacity
                        expected.idleBlocks -= 1
                    } else {
                        #expect(block.zeroed, "seed \(seed)")
                        #expect(block.base.load(fromByteOffset: block.capacity - 1, as: UInt8.self) == 0)
                        expected.mapped += 1
                    }
                }
                // The whole count is writable (a page short would crash here, not pass). memset: the generic
                // initializer is a byte loop in a debug build.
                memset(block.base, Int32(mark), count)
                live.append(Live(block: block, count: count, mark: mark))
            } else if choice < 92 {
                let victim = live.remove(at: Int.random(in: 0..<live.count, using: &random))
                pool.release(victim.block)
                if victim.count >= PixelPool.minimumPooledSize {
                    expected.liveBytes -= victim.capacity
                    if expected.idleBytes + victim.capacity <= byteLimit {
                        order += 1
                        let sizeClass = PixelPool.sizeClass(for: victim.count)!
                        idle[sizeClass, default: []].append((UInt(bitPattern: victim.base), order, victim.mark))
                        expected.idleBytes += victim.capacity
                        expected.idleBlocks += 1
                    } else {
                        expected.unmapped += 1
                    }
                }
            } else if choice < 95 {
                pool.trim()
                dropOldest(over: 0)
            } else {
                byteLimit = [0, 1 << 20, 4 << 20, limit].randomElement(using: &random)!
                pool.byteLimit = byteLimit
                dropOldest(over: byteLimit)
            }
            let actual = pool.statistics
            #expect(actual == expected, "step \(step), seed \(seed)")
            if actual != expected { break }
            #expect(actual.idleBytes <= byteLimit)
        }
        for entry in live { pool.release(entry.block) }
        #expect(pool.statistics.liveBytes == 0, "seed \(seed)")
    }

    @Test(
        "a block of 2 MiB or more starts on a huge page; its whole huge pages are advised, the slack past them not",
        .disabled(if: PixelPool.underAddressSanitizer, "under ASan every block is malloc'd, nothing is pooled"))
    func largeBlocksAreAdvisedForHugePages() throws {
        let huge = UInt(PixelPool.hugePageSize)
        // (bytes asked, bytes advised): a 1920x1080 RGBA frame in its 8 MiB class, advised whole; 4 MiB + 1 in a
        // 5 MiB class, advised for 4 MiB (a third huge page would pass the block's end); 1 MiB, none.
        for (count, advised) in [(8_294_400, 4 * huge), ((4 << 20) + 1, 2 * huge), (1 << 20, 0)] as [(Int, UInt)] {
            let pool = PixelPool()
            let block = try #require(pool.allocate(count))
            defer { pool.release(block) }
            let address = UInt(bitPattern: block.base)
            let mappings = try Self.mappings()
            // The kernel lists an madvise(MADV_HUGEPAGE) range as a mapping of its own with the `hg` flag (merged
            // with a neighbour of the same flags, so judged by containment).
            let head = mappings.first { $0.start <= address && address < $0.end }
            if advised > 0 {
                #expect(address % huge == 0, "\(count): block at \(String(address, radix: 16))")
                #expect(
                    head?.flags.contains("hg") == true && head!.end >= address + advised,
                    "\(count): \(head.map { "\($0)" } ?? "none")")
            } else {
                #expect(head?.flags.contains("hg") == false, "\(count)")
            }
            let tailAddress = address + advised
            if tailAddress < address + UInt(block.capacity) {
                let tail = mappings.first { $0.start <= tailAddress && tailAddress < $0.end }
                #expect(tail?.flags.contains("hg") == false, "\(count): the slack past the advised pages")
            }
        }
        let small = PixelPool()
        small.usesHugePages = false
        let plain = try #require(small.allocate(8_294_400))
        defer { small.release(plain) }
        let address = UInt(bitPattern: plain.base)
        let mapping = try Self.mappings().first { $0.start <= address && address < $0.end }
        #expect(mapping?.flags.contains("hg") == false, "usesHugePages = false advises nothing")
    }

    @Test(
        "a pooled buffer's resident count covers what it holds: whole huge pages, none of an earlier buffer's pages",
        .disabled(if: PixelPool.underAddressSanitizer, "under ASan every block is malloc'd, nothing is pooled"))
    func residentCountCoversWhatIsHeld() throws {
        let huge = PixelPool.hugePageSize
        // A 1920x1080 RGBA frame (8,294,400 bytes) ends inside the last of its 8 MiB class's four advised huge
        // pages, which is faulted in whole: it holds 8 MiB, and counts 8 MiB.
        let pool = PixelPool(idleTrimDelay: .seconds(3600))
        defer { pool.trim() }
        let frame = try #require(pool.allocate(8_294_400))
        #expect(frame.advised == 4 * huge && frame.resident == 4 * huge)
        memset(frame.base, 1, 8_294_400)
        let held = try Self.residentBytes(frame)
        #expect(held >= 8_294_400 && held <= frame.resident, "mincore: \(held) bytes resident")
        pool.release(frame)

        // Small pages: a smaller buffer reusing the block of a larger one must not hold that one's pages past its
        // own end (they are given back), or the smaller count would understate the memory.
        let small = PixelPool(idleTrimDelay: .seconds(3600))
        small.usesHugePages = false
        defer { small.trim() }
        let first = try #require(small.allocate(8_294_400))
        #expect(first.advised == 0 && first.resident == 8_294_400)
        memset(first.base, 1, 8_294_400)
        #expect(try Self.residentBytes(first) >= 8_294_400, "mincore sees the written pages")
        small.release(first)
        let second = try #require(small.allocate(7_400_000))
        #expect(second.base == first.base && second.resident == 7_400_000)
        memset(second.base, 2, 7_400_000)
        let reused = try Self.residentBytes(second)
        #expect(reused >= 7_400_000 && reused <= (7_400_000 + 4095) / 4096 * 4096, "mincore: \(reused) bytes")
        #expect(second.base.load(fromByteOffset: 7_399_999, as: UInt8.self) == 2)
        small.release(second)

        // An image's memory cost is what its pixels hold, not their byte count.
        let image = Image(
            pixels: PixelBuffer(
                width: 1920, height: 1080, layout: .rgba8, bytes: [UInt8](repeating: 3, count: 8_294_400)))
        #expect(image.memoryCost == image.pixels.residentByteCount && image.memoryCost >= 8_294_400)
    }

    /// Bytes of `block` resident now (`mincore`, page by page).
    private static func residentBytes(_ block: PixelPool.Block) throws -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = (block.capacity + page - 1) / page
        var vector = [UInt8](repeating: 0, count: pages)
        let status = vector.withUnsafeMutableBufferPointer { mincore(block.base, block.capacity, $0.baseAddress) }
        try #require(status == 0, "mincore failed: errno \(errno)")
        return vector.reduce(0) { $0 + Int($1 & 1) } * page
    }

    /// The process's mappings from /proc/self/smaps: start, end and VmFlags.
    private static func mappings() throws -> [(start: UInt, end: UInt, flags: [Substring])] {
        // Read to the end: a /proc file states no size.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var result: [(start: UInt, end: UInt, flags: [Substring])] = []
        for line in text.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
                let start = UInt(line[..<dash], radix: 16),
                let end = UInt(line[line.index(after: dash)..<space], radix: 16)
            {
                result.append((start, end, []))
            } else if line.hasPrefix("VmFlags:"), !result.isEmpty {
                result[result.count - 1].flags = line.dropFirst("VmFlags:".count).split(separator: " ")
            }
        }
        return result
    }

    @Test(
        "idle blocks go back to the system after the idle delay; trim() drops them at once",
        .disabled(if: PixelPool.underAddressSanitizer, "under ASan every block is malloc'd, nothing is pooled"))
    func idleBlocksAreTrimmed() async throws {
        let pool = PixelPool(byteLimit: 64 << 20, idleTrimDelay: .milliseconds(50))
        let blocks = (0..<8).compactMap { _ in pool.allocate(1 << 20) }
        #expect(blocks.count == 8)
        for block in blocks { pool.release(block) }
        #expect(pool.statistics.idleBlocks == 8)
        #expect(await waitUntil { pool.statistics.idleBlocks == 0 }, "idle blocks were never trimmed")
        #expect(pool.statistics.unmapped == 8 && pool.statistics.idleBytes == 0)

        let slow = PixelPool(byteLimit: 64 << 20, idleTrimDelay: .seconds(3600))
        let block = try #require(slow.allocate(200_000))
        slow.release(block)
        #expect(slow.statistics.idleBlocks == 1)
        slow.trim()
        #expect(slow.statistics.idleBlocks == 0 && slow.statistics.unmapped == 1)
    }

    @Test(
        "threads allocating and releasing at once leave the counters balanced and never share a live block",
        .disabled(if: PixelPool.underAddressSanitizer, "under ASan every block is malloc'd, nothing is pooled"))
    func concurrentUseStaysConsistent() async {
        let pool = PixelPool(byteLimit: 16 << 20, idleTrimDelay: .seconds(3600))
        defer { pool.trim() }
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var random = SplitMix64(seed: UInt64(worker))
            let mark = UInt8(worker + 1)
            let expected = [UInt8](repeating: mark, count: 2 << 20)
            for _ in 0..<300 {
                let count = [80_000, 500_000, 2 << 20].randomElement(using: &random)!
                guard let block = pool.allocate(count) else {
                    failures.withLock { $0 += 1 }
                    continue
                }
                memset(block.base, Int32(mark), count)
                // Another thread writing any byte of the same block would show here.
                if memcmp(block.base, expected, count) != 0 { failures.withLock { $0 += 1 } }
                pool.release(block)
            }
        }
        #expect(failures.value == 0)
        let statistics = pool.statistics
        #expect(statistics.liveBytes == 0 && statistics.idleBytes <= 16 << 20)
        #expect(statistics.reused + statistics.mapped == 8 * 300)
        #expect(statistics.mapped - statistics.unmapped == statistics.idleBlocks)
    }
}

extension PixelPoolTests {
    @Test("a copy shares the storage until one side writes; the writer copies and the other keeps its pixels")
    func buffersAreCopyOnWrite() {
        var first = PixelBuffer(width: 200, height: 100, layout: .rgba8)
        first.withUnsafeMutableBytes { $0.update(repeating: 3) }
        var second = first
        #expect(second.sharesStorage(with: first))
        second.withUnsafeMutableBytes { $0[0] = 9 }
        #expect(!second.sharesStorage(with: first))
        #expect(first.pixel(x: 0, y: 0) == [3, 3, 3, 3] && second.pixel(x: 0, y: 0) == [9, 3, 3, 3])
        // A buffer alone on its storage writes in place.
        let before = second
        second = PixelBuffer(width: 1, height: 1, layout: .gray8)
        var alone = before
        withExtendedLifetime(before) {}
        alone.withUnsafeMutableBytes { $0[1] = 1 }
        #expect(alone.pixel(x: 0, y: 0) == [9, 1, 3, 3])
    }

    @Test("zeroed buffers are zero even on recycled storage; a failed initializer makes no buffer")
    func recycledStorageIsNeverSeenUninitialized() {
        // Dirty a block of the size below, give it back, then ask for zeroed storage of that size.
        let dirty = PixelBuffer(width: 300, height: 300, layout: .rgba8) { (bytes: UnsafeMutableBufferPointer<UInt8>) in
            bytes.update(repeating: 0xAB)
        }
        #expect(dirty.pixel(x: 299, y: 299) == [0xAB, 0xAB, 0xAB, 0xAB])
        for _ in 0..<4 {
            let zeroed = PixelBuffer(width: 300, height: 300, layout: .rgba8)
            #expect(zeroed.withUnsafeBytes { !$0.contains { $0 != 0 } })
            let fromInput = try? PixelBuffer(zeroedWidth: 300, height: 300, layout: .rgba8)
            #expect(fromInput?.withUnsafeBytes { !$0.contains { $0 != 0 } } == true)
        }
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            _ = try PixelBuffer(width: 300, height: 300, layout: .rgba8) { (_: UnsafeMutableBufferPointer<UInt8>) in
                throw Refused()
            }
        }
        #expect(throws: ImageError.self) {
            _ = try PixelBuffer(validatingWidth: -1, height: 3, layout: .rgba8) { _ in }
        }
    }

    @Test("equal pixels are equal buffers and hash alike, whether they share storage or not")
    func equalityFollowsThePixels() {
        let a = PixelBuffer(width: 2, height: 2, layout: .rgb8, bytes: Array(0..<12))
        let b = PixelBuffer(width: 2, height: 2, layout: .rgb8, bytes: Array(0..<12))
        var c = a
        c.withUnsafeMutableBytes { $0[11] = 0 }
        #expect(a == b && a.hashValue == b.hashValue && !a.sharesStorage(with: b))
        #expect(a != c)
        let alias = a
        #expect(alias == a && alias.sharesStorage(with: a), "the same storage is equal without a compare")
    }

    /// A header may declare a size that passes every check on its sides and still is more memory than the system
    /// gives (here 2^60 bytes). That is the input's fault, so it must be a typed error, not the end of the process.
    @Test(
        "pixel memory the system refuses is an imageTooLarge error from every initializer for untrusted sizes",
        .disabled(if: PixelPool.underAddressSanitizer, "ASan's allocator aborts on such a request instead of failing"))
    func refusedMemoryIsATypedError() {
        let (width, height) = (1 << 30, 1 << 28)
        var ran = false
        let decoding = #expect(throws: ImageError.self) {
            _ = try PixelBuffer(validatingWidth: width, height: height, layout: .rgba8) { _ in ran = true }
        }
        #expect(decoding?.code == .imageTooLarge && decoding?.stage == .decode && !ran)
        let zeroed = #expect(throws: ImageError.self) {
            _ = try PixelBuffer(zeroedWidth: width, height: height, layout: .rgba8)
        }
        #expect(zeroed?.code == .imageTooLarge)
        // The pool is unharmed: the next buffer is served as usual.
        #expect(PixelBuffer(width: 300, height: 300, layout: .rgba8).byteCount == 360_000)
    }

    @Test("bytes copy out whole or in part, and iteration resumes where a partial copy stopped")
    func bytesCopyOutAtOnce() {
        let buffer = PixelBuffer(width: 100, height: 300, layout: .rgba8) {
            (bytes: UnsafeMutableBufferPointer<UInt8>) in
            for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 7) }
        }
        let all = Array(buffer.bytes)
        #expect(all.count == 120_000 && buffer.bytes == all && all[119_999] == UInt8(truncatingIfNeeded: 119_999 * 7))
        var appended: [UInt8] = [42]
        appended.append(contentsOf: buffer.bytes)
        #expect(appended.count == 120_001 && Array(appended.dropFirst()) == all)
        let part = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1_000)
        defer { part.deallocate() }
        var (rest, copied) = part.initialize(from: buffer.bytes)
        #expect(copied == 1_000 && Array(part) == Array(all.prefix(1_000)))
        #expect(rest.next() == all[1_000] && rest.next() == all[1_001])
        #expect(buffer.bytes.reduce(0) { $0 &+ Int($1) } == all.reduce(0) { $0 &+ Int($1) })
    }

    @Test("gray from equal channels keeps the first channel and alpha, skipping row padding")
    func grayFromEqualChannelsSkipsPadding() throws {
        // 2×2 RGBA with 4 bytes of padding per row.
        let rgba = try PixelBuffer(
            width: 2, height: 2, layout: .rgba8, alphaMode: .straight, bytesPerRow: 12,
            validating: [10, 10, 10, 1, 20, 20, 20, 2, 99, 99, 99, 99, 30, 30, 30, 3, 40, 40, 40, 4, 99, 99, 99, 99])
        let gray = rgba.grayFromEqualChannels()
        #expect(gray.layout == .grayAlpha8 && gray.alphaMode == .straight && gray.bytesPerRow == 4)
        #expect(gray.bytes == [10, 1, 20, 2, 30, 3, 40, 4])
        let rgb = PixelBuffer(width: 3, height: 1, layout: .rgb8, bytes: [5, 5, 5, 6, 6, 6, 7, 7, 7])
        #expect(rgb.grayFromEqualChannels().bytes == [5, 6, 7] && rgb.grayFromEqualChannels().layout == .gray8)
    }
}
