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
        let started = Atomic<Int>(0)
        // What the workers did (stores that succeeded, reads that hit): counted so the changes provably met them.
        let stores = Atomic<Int>(0)
        let hits = Atomic<Int>(0)
        let errors = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                var random = SystemRandomNumberGenerator()
                started.add(1, ordering: .relaxed)
                while !done.load(ordering: .relaxed) {
                    // Keys shared by the workers: a read may meet another worker's store, trim or sweep.
                    let key = "k\(random.next() % 40)"
                    let index = Int(random.next() % UInt64(bodies.count))
                    if random.next() % 2 == 0 {
                        // A store larger than the size limit in force at that moment may be refused; nothing else.
                        do {
                            try cache.storeData(
                                bodies[index], metadata: CacheEntryMetadata(etag: "\(index)"), forKey: key)
                            stores.add(1, ordering: .relaxed)
                        } catch let error as ImageError
                            where error.message?.contains("exceeds the entry size limit") == true
                        {
                        } catch {
                            errors.withLock { $0.append("store: \(error)") }
                        }
                    } else if let entry = try? cache.entry(forKey: key) {
                        hits.add(1, ordering: .relaxed)
                        let tag = entry.metadata.etag.flatMap(Int.init)
                        if tag == nil || bodies[tag!] != entry.data { errors.withLock { $0.append("torn \(key)") } }
                    }
                }
                group.leave()
            }
        }
        // The changes start once every worker runs and has stored, so they meet the workers' reads and stores.
        while started.load(ordering: .relaxed) < 3 || stores.load(ordering: .relaxed) < 20 { usleep(100) }
        let (storesBefore, hitsBefore) = (stores.load(ordering: .relaxed), hits.load(ordering: .relaxed))
        let sizes = [300_000, 30_000, 150_000, 0, 60_000]
        var seen = (storesBefore, hitsBefore)
        for step in 0..<200 {
            // Each change waits (10 ms at most) until the workers stored and hit since the last one.
            let giveUp = DispatchTime.now().uptimeNanoseconds + 10_000_000
            while stores.load(ordering: .relaxed) == seen.0 || hits.load(ordering: .relaxed) == seen.1,
                DispatchTime.now().uptimeNanoseconds < giveUp
            {
                usleep(50)
            }
            seen = (stores.load(ordering: .relaxed), hits.load(ordering: .relaxed))
            cache.maxDiskSize = sizes[step % sizes.count]
            cache.maxDiskAge = step % 7 == 0 ? 3600 : nil
            if step % 10 == 0 { cache.sweep() }
            usleep(500)
        }
        let storesDuring = stores.load(ordering: .relaxed) - storesBefore
        let hitsDuring = hits.load(ordering: .relaxed) - hitsBefore
        done.store(true, ordering: .relaxed)
        group.wait()
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0.prefix(3) })")
        #expect(storesDuring > 100, "only \(storesDuring) stores during the 200 changes: they hardly met")
        #expect(hitsDuring > 100, "only \(hitsDuring) read hits during the 200 changes: they hardly met")
        cache.maxDiskSize = 25_000
        cache.sweep()
        #expect(cache.totalSize() <= 25_000)
        try cache.storeData(bodies[0], forKey: "after")
        #expect(cache.totalSize() <= 25_000)
    }
}
