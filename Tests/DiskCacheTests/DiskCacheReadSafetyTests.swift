import Foundation
import ImageCore
import ImageTestSupport
import MetricsTestKit
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Reads never take more memory than an entry may have, and never serve a file someone else is changing.
@Suite("DiskCache read safety", .timeLimit(.minutes(1)))
struct DiskCacheReadSafetyTests {
    /// The bytes of a valid entry file for `key` (written by a cache without an entry size limit).
    static func entryFile(key: String, body: Data, etag: String = "e") throws -> Data {
        let directory = CacheFixtures.temporaryDirectory("donor")
        defer { DiskTest.removeDirectory(directory) }
        let donor = DiskTest.cache(directory)
        try donor.storeData(body, metadata: CacheEntryMetadata(etag: etag), forKey: key)
        return try Data(contentsOf: donor.fileURL(forKey: key))
    }

    static func cache(_ directory: URL, maxEntrySize: Int, metrics: TestMetrics? = nil) -> DiskCache {
        var config = DiskTest.configuration(directory)
        config.maxEntrySize = maxEntrySize
        config.metricsFactory = metrics
        let cache = DiskCache(configuration: config)
        cache.sweep()
        return cache
    }

    @Test("a store above the entry size limit fails and keeps the previous entry")
    func storeAboveLimit() throws {
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, maxEntrySize: 1_000)
        try cache.storeData(Data(count: 1_000), forKey: "k")
        #expect(throws: ImageError.self) { try cache.storeData(Data(count: 1_001), forKey: "k") }
        #expect(cache.data(forKey: "k") == Data(count: 1_000))
    }

    @Test("an entry file replaced on disk by a larger valid one is a miss and is removed")
    func replacedBeyondLimit() throws {
        let metrics = TestMetrics()
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, maxEntrySize: 10_000, metrics: metrics)
        try cache.storeData(Data(count: 100), forKey: "k")
        // Larger than the cap plus the biggest possible header: refused before any read.
        let big = try Self.entryFile(key: "k", body: CacheFixtures.bytes(count: 10_000 + (1 << 20) + 1, seed: 1))
        try big.write(to: cache.fileURL(forKey: "k"))
        #expect(try cache.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "k").path))
        // Above the cap but within the header's slack: read, refused by the header check, removed.
        let over = try Self.entryFile(key: "k", body: CacheFixtures.bytes(count: 10_001, seed: 2))
        try over.write(to: cache.fileURL(forKey: "k"))
        #expect(try cache.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "k").path))
        #expect(try metrics.expectCounter("webimage_disk_bad_entries_total", [("kind", "oversize")]).totalValue == 1)
        #expect(try metrics.expectCounter("webimage_disk_bad_entries_total", [("kind", "corrupt")]).totalValue == 1)
    }

    @Test("an entry file grown to 1 TiB (sparse) is not read into memory: a miss, removed")
    func grownToATebibyte() throws {
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, maxEntrySize: 64 << 20)
        try cache.storeData(Data([1, 2, 3]), forKey: "k")
        let path = cache.fileURL(forKey: "k").path
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        // Without the cap the read would allocate 1 TiB (and the process die).
        let grown = ftruncate(fd, off_t(1) << 40)
        close(fd)
        try #require(grown == 0, "this file system cannot hold a 1 TiB sparse file")
        #expect(try cache.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!cache.containsData(forKey: "k"))
    }

    @Test("with checksums on, a body damaged at rest (same length) is a miss, is removed and is counted")
    func damagedBodyWithChecksums() throws {
        let metrics = TestMetrics()
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        var config = DiskTest.configuration(directory)
        config.verifiesChecksums = true
        config.metricsFactory = metrics
        let cache = DiskCache(configuration: config)
        cache.sweep()
        let body = CacheFixtures.bytes(count: 50_000, seed: 4)
        try cache.storeData(body, forKey: "k")
        #expect(cache.data(forKey: "k") == body)
        let url = cache.fileURL(forKey: "k")
        var file = try Data(contentsOf: url)
        file[file.count - 1_000] ^= 0x40
        try file.write(to: url)
        #expect(try cache.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try metrics.expectCounter("webimage_disk_bad_entries_total", [("kind", "corrupt")]).totalValue == 1)
        // The key works again after the bad file is gone.
        try cache.storeData(body, forKey: "k")
        #expect(cache.data(forKey: "k") == body)
    }

    @Test("an entry truncated by another writer while it is being read is a miss, never wrong bytes")
    func truncatedMidRead() throws {
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        let key = "https://example.com/truncated.png"
        let body = CacheFixtures.bytes(count: 400_000, seed: 9)
        let whole = try Self.entryFile(key: key, body: body)
        let path = cache.fileURL(forKey: key).path
        let spare = path + ".spare"
        let stop = Atomic<Bool>(false)
        let truncations = Atomic<Int>(0)
        let writerDone = DispatchSemaphore(value: 0)
        let writerStarted = DispatchSemaphore(value: 0)
        try whole.write(to: URL(fileURLWithPath: path))
        // The other writer: writes a whole copy beside the published file, truncates the published file to a
        // random length, then publishes the copy by rename. The path holds a whole entry nearly all the time, so
        // most reads are hits and many of them overlap a truncation (a reader holding the truncated inode must
        // not serve it: a read racing a truncation can return the full count with the cut page zeroed).
        Thread.detachNewThread {
            var random = SplitMix(seed: 5)
            while !stop.load(ordering: .relaxed) {
                _ = FileManager.default.createFile(atPath: spare, contents: whole)
                let fd = open(path, O_WRONLY)
                if fd >= 0 {
                    _ = ftruncate(fd, off_t(random.next() % UInt64(whole.count)))
                    close(fd)
                    truncations.add(1, ordering: .relaxed)
                }
                _ = rename(spare, path)
                if truncations.load(ordering: .relaxed) == 1 { writerStarted.signal() }
            }
            writerDone.signal()
        }
        writerStarted.wait()
        var wrong = 0
        let hits = try Self.readUntilEnoughHits {
            guard let entry = try cache.entry(forKey: key) else { return false }
            if entry.data != body { wrong += 1 }
            return true
        }
        stop.store(true, ordering: .relaxed)
        writerDone.wait()
        #expect(wrong == 0, "\(wrong) of \(hits) hits served bytes that are not the entry")
        #expect(hits > 300, "only \(hits) hits in 5 s: the race was hardly attacked")
        #expect(truncations.load(ordering: .relaxed) > 0)
    }

    /// Runs `read` (true for a hit) until 3,000 hits, or at least 3,000 reads and 5 seconds; returns the hits.
    /// With the suite's other tests on the same cores, a fixed number of reads can end before the writer gets to
    /// run, and a test whose reads never overlap a change cannot fail.
    static func readUntilEnoughHits(_ read: () throws -> Bool) rethrows -> Int {
        let deadline = ContinuousClock.now + .seconds(5)
        var reads = 0
        var hits = 0
        while hits < 3_000 && (reads < 3_000 || ContinuousClock.now < deadline) {
            if try read() { hits += 1 }
            reads += 1
        }
        return hits
    }

    /// Kernels from 6.13 give a file a new change time for any change after its change time was read
    /// (multigrain timestamps on ext4, xfs, btrfs, tmpfs), which is what detects a change during a read without
    /// a checksum; older kernels may miss one made within the same timer tick as the previous change.
    static let hasMultigrainTimestamps: Bool = {
        var name = utsname()
        guard uname(&name) == 0 else { return false }
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard parts.count == 2 else { return false }
        return parts[0] > 6 || (parts[0] == 6 && parts[1] >= 13)
    }()

    /// Another writer rewrites the entry file of one key over and over with two versions of the same length,
    /// in 64 KiB chunks, truncating first or not, resting up to 1 ms between rewrites (so that reads both hit
    /// whole versions and overlap rewrites), while this thread reads it (``readUntilEnoughHits(hits:_:)``);
    /// returns the hits that were neither version, and the hits.
    static func readWhileRewriting(verifiesChecksums: Bool, truncates: Bool) throws -> (mixed: Int, hits: Int) {
        let directory = CacheFixtures.temporaryDirectory("read")
        defer { DiskTest.removeDirectory(directory) }
        var config = DiskTest.configuration(directory)
        config.verifiesChecksums = verifiesChecksums
        let cache = DiskCache(configuration: config)
        cache.sweep()
        let key = "https://example.com/rewritten.png"
        let bodies = [CacheFixtures.bytes(count: 400_000, seed: 1), CacheFixtures.bytes(count: 400_000, seed: 2)]
        let files = try bodies.map { try entryFile(key: key, body: $0) }
        #expect(files[0].count == files[1].count)
        let path = cache.fileURL(forKey: key).path
        try files[0].write(to: URL(fileURLWithPath: path))
        let stop = Atomic<Bool>(false)
        let writerDone = DispatchSemaphore(value: 0)
        let writerStarted = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var random = SplitMix(seed: 11)
            var version = 1
            var rewrites = 0
            while !stop.load(ordering: .relaxed) {
                let fd = open(path, O_WRONLY | O_CREAT | (truncates ? O_TRUNC : 0), 0o644)
                if fd >= 0 {
                    files[version].withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let chunk = min(64 * 1024, bytes.count - offset)
                            let written = pwrite(fd, bytes.baseAddress! + offset, chunk, off_t(offset))
                            if written <= 0 { break }
                            offset += written
                        }
                    }
                    close(fd)
                    rewrites += 1
                    if rewrites == 1 { writerStarted.signal() }
                }
                version = 1 - version
                usleep(UInt32(random.next() % 1_000))
            }
            writerDone.signal()
        }
        writerStarted.wait()
        var mixed = 0
        let hits = try Self.readUntilEnoughHits {
            guard let entry = try cache.entry(forKey: key) else { return false }
            if entry.data != bodies[0] && entry.data != bodies[1] { mixed += 1 }
            return true
        }
        stop.store(true, ordering: .relaxed)
        writerDone.wait()
        return (mixed, hits)
    }

    @Test("an entry overwritten in place (no truncation) while read: with checksums on, a miss or one whole version")
    func overwrittenInPlaceWithChecksums() throws {
        let (mixed, hits) = try Self.readWhileRewriting(verifiesChecksums: true, truncates: false)
        #expect(mixed == 0, "\(mixed) of \(hits) hits mixed two versions")
        #expect(hits > 300, "only \(hits) hits in 5 s: the race was hardly attacked")
    }

    @Test(
        "an entry rewritten with truncation (as a shell's > does) while read: by default a miss or one whole version",
        .enabled(if: hasMultigrainTimestamps, "needs Linux 6.13+ change times to see a change during a read"))
    func rewrittenWithTruncation() throws {
        let (mixed, hits) = try Self.readWhileRewriting(verifiesChecksums: false, truncates: true)
        #expect(mixed == 0, "\(mixed) of \(hits) hits mixed two versions")
        #expect(hits > 300, "only \(hits) hits in 5 s: the race was hardly attacked")
    }

    /// A FIFO where an entry's file is (another process's doing, or a damaged directory) is not an entry: before,
    /// opening it waited for a writer forever and the read never ended. It is a miss at once, and removed.
    @Test func aFIFOInPlaceOfAnEntryIsAMissAtOnce() throws {
        let directory = CacheFixtures.temporaryDirectory("fifo")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        try cache.storeData(CacheFixtures.bytes(count: 1000, seed: 3), metadata: CacheEntryMetadata(), forKey: "k")
        let path = cache.fileURL(forKey: "k").path
        try FileManager.default.removeItem(atPath: path)
        try #require(mkfifo(path, 0o600) == 0)
        let answer = Mutex<Result<DiskCacheEntry?, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let result = Result { try cache.entry(forKey: "k") }
            answer.withLock { $0 = result }
            done.signal()
        }
        try #require(done.wait(timeout: .now() + 5) == .success, "the read of a FIFO did not end in 5 s")
        let result = try #require(answer.withLock { $0 })
        #expect(try result.get() == nil)
        #expect(!FileManager.default.fileExists(atPath: path), "the FIFO is removed like any corrupt entry")
    }
}
