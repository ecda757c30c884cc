import Dispatch
import Foundation
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Issue 25 item 2: the size and age limits change while the cache runs, as SDWebImage's
/// `SDImageCacheConfig.maxDiskSize` / `maxDiskAge` do (read by its next trim).
@Suite("DiskCache limits changed at run time")
struct DiskCacheRuntimeLimitsTests {
    @Test("SDImageCacheConfig.maxDiskSize changed at runtime: the next store trims to the new low-water mark")
    func lowerSizeNextStore() throws {
        let cache = DiskTest.cache(maxDiskSize: 1 << 20)
        defer { DiskTest.removeDirectory(cache.directory) }
        for index in 0..<20 { try cache.storeData(Data(count: 10_000), forKey: "k\(index)") }
        #expect(cache.totalSize() > 200_000)
        cache.maxDiskSize = 100_000
        #expect(cache.maxDiskSize == 100_000 && cache.configuration.maxDiskSize == 100_000)
        try cache.storeData(Data(count: 10_000), forKey: "next")
        #expect(cache.totalSize() <= 80_000, "trimmed to 80 % of the new limit")
        #expect(cache.data(forKey: "next") != nil, "the newest entry is kept")
        // The entry size limit follows the size limit.
        #expect(throws: ImageError.self) { try cache.storeData(Data(count: 100_001), forKey: "too big") }
    }

    @Test("SDImageCacheConfig.maxDiskSize changed at runtime: the next sweep honours it, and 0 lifts the limit")
    func lowerSizeNextSweep() throws {
        let cache = DiskTest.cache(maxDiskSize: 1 << 20)
        defer { DiskTest.removeDirectory(cache.directory) }
        for index in 0..<20 { try cache.storeData(Data(count: 10_000), forKey: "k\(index)") }
        cache.maxDiskSize = 50_000
        cache.sweep()
        #expect(cache.totalSize() <= 40_000)
        cache.maxDiskSize = 0
        for index in 0..<30 { try cache.storeData(Data(count: 10_000), forKey: "more\(index)") }
        cache.sweep()
        #expect(cache.totalCount() >= 30, "no size limit any more")
        cache.maxDiskSize = -1
        #expect(cache.maxDiskSize == 0)
    }

    @Test("SDImageCacheConfig.maxDiskAge changed at runtime: older entries are misses at once, the sweep removes them")
    func lowerAge() throws {
        let clock = ManualDate()
        let cache = DiskTest.cache(maxDiskAge: 7 * 24 * 3600, clock: clock)
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data([1]), forKey: "old")
        clock.advance(3600)
        try cache.storeData(Data([2]), forKey: "new")
        clock.advance(60)
        cache.maxDiskAge = 1800
        #expect(cache.maxDiskAge == 1800 && cache.configuration.maxDiskAge == 1800)
        #expect(try cache.entry(forKey: "old") == nil)
        #expect(!cache.containsData(forKey: "old"))
        #expect(cache.data(forKey: "new") == Data([2]))
        cache.maxDiskAge = nil
        clock.advance(365 * 24 * 3600)
        #expect(cache.data(forKey: "new") == Data([2]), "nil keeps entries forever")
        try cache.storeData(Data([3]), forKey: "another")
        cache.maxDiskAge = 10
        clock.advance(11)
        cache.sweep()
        #expect(cache.totalCount() == 0)
        cache.maxDiskAge = .nan
        #expect(cache.maxDiskAge == nil)
    }

    @Test("SDImageCacheConfig.maxDiskSize changed at runtime under concurrency: writers, readers and a changer")
    func concurrentChanges() throws {
        let cache = DiskTest.cache(maxDiskSize: 400_000, sweepAfterBytesWritten: 50_000)
        defer { DiskTest.removeDirectory(cache.directory) }
        let bodies = (0..<8).map { CacheFixtures.bytes(count: 2_000 + $0 * 3_000, seed: UInt64($0)) }
        let done = Atomic<Bool>(false)
        let errors = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                var random = SystemRandomNumberGenerator()
                while !done.load(ordering: .relaxed) {
                    let key = "w\(worker)-\(random.next() % 40)"
                    let index = Int(random.next() % UInt64(bodies.count))
                    if random.next() % 2 == 0 {
                        // A store larger than the size limit in force at that moment may be refused; nothing else.
                        do {
                            try cache.storeData(
                                bodies[index], metadata: CacheEntryMetadata(etag: "\(index)"), forKey: key)
                        } catch let error as ImageError
                            where error.message?.contains("exceeds the entry size limit") == true
                        {
                        } catch {
                            errors.withLock { $0.append("store: \(error)") }
                        }
                    } else if let entry = try? cache.entry(forKey: key) {
                        let tag = entry.metadata.etag.flatMap(Int.init)
                        if tag == nil || bodies[tag!] != entry.data { errors.withLock { $0.append("torn \(key)") } }
                    }
                }
                group.leave()
            }
        }
        let sizes = [300_000, 30_000, 150_000, 0, 60_000]
        for step in 0..<200 {
            cache.maxDiskSize = sizes[step % sizes.count]
            cache.maxDiskAge = step % 7 == 0 ? 3600 : nil
            if step % 10 == 0 { cache.sweep() }
            usleep(500)
        }
        done.store(true, ordering: .relaxed)
        group.wait()
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0.prefix(3) })")
        cache.maxDiskSize = 25_000
        cache.sweep()
        #expect(cache.totalSize() <= 25_000)
        try cache.storeData(bodies[0], forKey: "after")
        #expect(cache.totalSize() <= 25_000)
    }
}
