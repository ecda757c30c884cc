import Foundation
import ImageCore
import ImageTestSupport
import Testing

@_spi(Fuzzing) @testable import DiskCache

@Suite("DiskCache limits and expiry")
struct DiskCacheLimitTests {
    @Test("entries expire by the access time the cache maintains, not by store time")
    func expiryByAccessTime() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let clock = ManualDate()
        let day: TimeInterval = 24 * 3600
        let cache = DiskTest.cache(directory, maxDiskAge: 7 * day, clock: clock)
        try cache.storeData(Data([1]), forKey: "read")
        try cache.storeData(Data([2]), forKey: "unread")
        let stored = try #require(DiskTest.accessTime(of: cache.fileURL(forKey: "read")))
        #expect(abs(stored.timeIntervalSince(clock.now)) < 1)

        clock.advance(5 * day)
        #expect(cache.data(forKey: "read") == Data([1]))
        let touched = try #require(DiskTest.accessTime(of: cache.fileURL(forKey: "read")))
        #expect(abs(touched.timeIntervalSince(clock.now)) < 1)

        clock.advance(3 * day)
        // "unread" is 8 days old: a miss, even before a sweep.
        #expect(!cache.containsData(forKey: "unread"))
        #expect(try cache.entry(forKey: "unread") == nil)
        try cache.storeData(Data([3]), forKey: "stale")
        clock.advance(8 * day)
        try cache.storeData(Data([4]), forKey: "fresh")
        cache.removeExpired()
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "stale").path))
        #expect(cache.data(forKey: "fresh") == Data([4]))
        #expect(cache.totalCount() == 1)
    }

    @Test("a hit rewrites the access time only when it is older than the granularity")
    func accessTimeGranularity() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let clock = ManualDate()
        let cache = DiskTest.cache(directory, granularity: 60, clock: clock)
        try cache.storeData(Data([1]), forKey: "k")
        let stored = try #require(DiskTest.accessTime(of: cache.fileURL(forKey: "k")))
        clock.advance(30)
        #expect(try cache.entry(forKey: "k")?.metadata.lastAccess.map { abs($0.timeIntervalSince(stored)) < 1 } == true)
        #expect(DiskTest.accessTime(of: cache.fileURL(forKey: "k")) == stored)
        clock.advance(31)
        _ = cache.data(forKey: "k")
        let touched = try #require(DiskTest.accessTime(of: cache.fileURL(forKey: "k")))
        #expect(touched.timeIntervalSince(stored) > 60)
    }

    @Test("the size limit holds after every write of a long stream")
    func sizeLimitDuringStream() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let limit = 200_000
        let cache = DiskTest.cache(directory, maxDiskSize: limit, sweepAfterBytesWritten: 1 << 30)
        var maxSeen = 0
        for index in 0..<400 {
            let size = 2_000 + (index * 7919) % 9_000
            try cache.storeData(CacheFixtures.bytes(count: size, seed: UInt64(index)), forKey: "stream-\(index)")
            let total = cache.totalSize()
            maxSeen = max(maxSeen, total)
            #expect(total <= limit, "after write \(index): \(total) bytes on disk")
        }
        #expect(maxSeen > limit * 3 / 4)
        #expect(cache.data(forKey: "stream-399") != nil)
    }

    @Test("the size limit holds for asynchronous stores too")
    func sizeLimitAsync() async throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let limit = 100_000
        let cache = DiskTest.cache(directory, maxDiskSize: limit)
        for index in 0..<100 {
            try await cache.store(
                nil, data: CacheFixtures.bytes(count: 5_000, seed: UInt64(index)), forKey: "a\(index)")
            #expect(cache.totalSize() <= limit)
        }
    }

    @Test("a sweep over the limit trims to the low-water mark, least recently accessed first")
    func lowWaterMark() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let clock = ManualDate()
        let cache = DiskTest.cache(
            directory, maxDiskSize: 100_000, sweepAfterBytesWritten: 1 << 30, granularity: 0, clock: clock)
        let body = 9_990
        for index in 0..<9 {
            try cache.storeData(CacheFixtures.bytes(count: body, seed: UInt64(index)), forKey: "k\(index)")
            clock.advance(1)
        }
        let entrySize = cache.totalSize() / 9
        #expect(cache.totalCount() == 9)
        // Touch the oldest entry: it becomes the most recently accessed and must survive the trim.
        #expect(cache.data(forKey: "k0") != nil)
        clock.advance(1)
        try cache.storeData(CacheFixtures.bytes(count: body, seed: 9), forKey: "k9")
        #expect(cache.totalSize() <= 80_000)
        #expect(cache.totalSize() > 80_000 - entrySize)
        #expect(cache.totalCount() == 80_000 / entrySize)
        #expect(cache.containsData(forKey: "k0"))
        #expect(cache.containsData(forKey: "k9"))
        #expect(!cache.containsData(forKey: "k1"))
        #expect(!cache.containsData(forKey: "k2"))
    }

    @Test("an entry larger than the whole limit is refused and the previous one kept")
    func entryLargerThanLimit() throws {
        let cache = DiskTest.cache(maxDiskSize: 10_000)
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data([1]), forKey: "k")
        #expect(throws: ImageError.self) { try cache.storeData(Data(count: 20_000), forKey: "k") }
        #expect(cache.data(forKey: "k") == Data([1]))
    }

    @Test("the periodic sweep enforces the limit against writes it did not make")
    func periodicSweep() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let limit = 50_000
        let ticker = ManualTicker()
        let sweeps = SweepEvents()
        var config = DiskTest.configuration(directory, maxDiskSize: limit)
        config.sweepTicker = ticker
        config.onSweep = sweeps.record
        let cache = DiskCache(configuration: config)
        cache.sweep()
        // Another writer (no limit) fills the directory behind the first cache's back.
        let other = DiskTest.cache(directory)
        for index in 0..<30 { try other.storeData(Data(count: 4_000), forKey: "o\(index)") }
        #expect(other.totalSize() > limit)
        ticker.fire()
        sweeps.wait(for: .timer)
        #expect(cache.totalSize() <= limit)
    }

    @Test("with a sweep interval, a Dispatch timer starts sweeps", .timeLimit(.minutes(1)))
    func dispatchTimer() {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let sweeps = SweepEvents()
        var config = DiskTest.configuration(directory, maxDiskSize: 50_000, sweepInterval: 0.05)
        config.onSweep = sweeps.record
        let cache = DiskCache(configuration: config)
        sweeps.wait(for: .timer)
        #expect(sweeps.triggers.first == .startup)
        withExtendedLifetime(cache) {}
    }

    @Test("a sweep runs after enough bytes were written, counting other writers")
    func sweepAfterBytes() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let limit = 50_000
        let cache = DiskTest.cache(directory, maxDiskSize: limit, sweepAfterBytesWritten: 1_000)
        let other = DiskTest.cache(directory)
        for index in 0..<30 { try other.storeData(Data(count: 4_000), forKey: "o\(index)") }
        #expect(cache.totalSize() > limit)
        try cache.storeData(Data(count: 2_000), forKey: "mine")
        #expect(cache.totalSize() <= limit)
        #expect(cache.containsData(forKey: "mine"))
    }

    @Test("removeAll empties the directory but keeps it")
    func removeAll() throws {
        let cache = DiskTest.cache(maxDiskSize: 1 << 20)
        defer { DiskTest.removeDirectory(cache.directory) }
        for index in 0..<20 { try cache.storeData(Data(count: 100), forKey: "k\(index)") }
        cache.removeAll()
        #expect(cache.totalCount() == 0)
        #expect(FileManager.default.fileExists(atPath: cache.directory.path))
        try cache.storeData(Data([1]), forKey: "after")
        #expect(cache.data(forKey: "after") == Data([1]))
    }
}
