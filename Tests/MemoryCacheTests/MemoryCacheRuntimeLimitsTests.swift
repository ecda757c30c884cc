import Dispatch
import Foundation
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

@testable import MemoryCache

/// Issue 25 item 2: the cost and count limits change while the cache runs, as SDWebImage's
/// `SDImageCacheConfig.maxMemoryCost` / `maxMemoryCount` (an `NSCache`'s `totalCostLimit` / `countLimit`) do.
@Suite("MemoryCache limits changed at run time", .timeLimit(.minutes(1)))
struct MemoryCacheRuntimeLimitsTests {
    static func filled(costLimit: Int = 10_000, countLimit: Int = .max, entries: Int, cost: Int) -> MemoryCache {
        let cache = MemoryCache(
            configuration: MemoryCacheConfiguration(
                costLimit: costLimit, countLimit: countLimit, maxEntryCost: costLimit))
        for index in 0..<entries { cache.setImage(CacheFixtures.image(cost: cost), forKey: "k\(index)") }
        return cache
    }

    @Test("SDImageCacheConfig.maxMemoryCost changed at runtime: lowering it evicts the least recently used at once")
    func lowerCostLimitTrimsAtOnce() {
        let cache = Self.filled(entries: 10, cost: 100)
        #expect(cache.totalCost == 1_000)
        _ = cache.image(forKey: "k0")  // k0 becomes the most recently used
        cache.costLimit = 350
        #expect(cache.costLimit == 350)
        #expect(cache.totalCost <= 350)
        #expect(cache.count == 3)
        #expect(Set(cache.keysInLRUOrder) == ["k0", "k9", "k8"])
        #expect(cache.isConsistent)
        #expect(cache.configuration.costLimit == 350)
        // The new limit governs later stores too.
        cache.setImage(CacheFixtures.image(cost: 100), forKey: "new")
        #expect(cache.totalCost <= 350 && cache.image(forKey: "new") != nil)
    }

    @Test("SDImageCacheConfig.maxMemoryCost changed at runtime: raising it keeps more entries; 0 empties the cache")
    func raiseAndZeroCostLimit() {
        let cache = Self.filled(costLimit: 300, entries: 10, cost: 100)
        #expect(cache.count == 3)
        cache.costLimit = 2_000
        for index in 10..<20 { cache.setImage(CacheFixtures.image(cost: 100), forKey: "k\(index)") }
        #expect(cache.count == 13 && cache.totalCost == 1_300)
        cache.costLimit = -5
        #expect(cache.costLimit == 0)
        #expect(cache.count == 0 && cache.totalCost == 0)
        #expect(!cache.setImage(CacheFixtures.image(cost: 4), forKey: "x"), "nothing fits a zero cost limit")
    }

    @Test("SDImageCacheConfig.maxMemoryCount changed at runtime: lowering it evicts at once")
    func lowerCountLimitTrimsAtOnce() {
        let cache = Self.filled(entries: 10, cost: 12)
        cache.countLimit = 4
        #expect(cache.count == 4)
        #expect(cache.keysInLRUOrder == ["k9", "k8", "k7", "k6"])
        cache.setImage(CacheFixtures.image(cost: 12), forKey: "new")
        #expect(cache.count == 4)
        #expect(cache.configuration.countLimit == 4)
        cache.countLimit = .max
        for index in 0..<10 { cache.setImage(CacheFixtures.image(cost: 12), forKey: "again\(index)") }
        #expect(cache.count == 14)
    }

    @Test("NSCache.totalCostLimit and the per-entry cap: an entry above maxEntryCost or the cost limit is refused")
    func maxEntryCostAtRuntime() {
        let cache = Self.filled(entries: 0, cost: 0)
        cache.setImage(CacheFixtures.image(cost: 500), forKey: "old")
        cache.maxEntryCost = 400
        #expect(cache.image(forKey: "old") != nil, "entries already held stay")
        #expect(!cache.setImage(CacheFixtures.image(cost: 500), forKey: "old"))
        #expect(cache.image(forKey: "old") == nil, "a refused store removes the older entry of its key")
        cache.maxEntryCost = 10_000
        cache.costLimit = 300
        #expect(!cache.setImage(CacheFixtures.image(cost: 304), forKey: "big"), "never above the cost limit")
        #expect(cache.setImage(CacheFixtures.image(cost: 300), forKey: "fits"))
    }

    @Test("a new cgroup memory limit resizes the cache as the default configuration would, evicting at once")
    func resizeForMemoryLimit() {
        let cache = Self.filled(costLimit: 1 << 30, entries: 10, cost: 1 << 20)
        #expect(cache.count == 10)
        let cost = cache.setCostLimit(forMemoryLimit: 20 << 20)
        #expect(cost == MemoryCacheConfiguration.defaultCostLimit(forMemoryLimit: 20 << 20))
        #expect(cost == 4 << 20)
        #expect(cache.costLimit == cost && cache.maxEntryCost == cost / 4)
        #expect(cache.totalCost <= cost && cache.count == 4)
        #expect(!cache.setImage(CacheFixtures.image(cost: (1 << 20) + 4), forKey: "over a quarter"))
        // Growing again (the container got more memory back).
        #expect(cache.setCostLimit(forMemoryLimit: 10 << 30) == MemoryCacheConfiguration.defaultCostLimitCap)
    }

    @Test("SDImageCacheConfig.maxMemoryCost changed at runtime under concurrency: limits hold after every change")
    func concurrentChanges() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 50_000, maxEntryCost: 1_000))
        let stop = Atomic<Bool>(false)
        let operations = Atomic<Int>(0)
        let started = Atomic<Int>(0)
        let violations = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                var random = SystemRandomNumberGenerator()
                var index = 0
                started.add(1, ordering: .relaxed)
                while !stop.load(ordering: .relaxed) {
                    let key = "w\(worker)-\(random.next() % 400)"
                    if index % 3 == 0 {
                        _ = cache.image(forKey: key)
                    } else {
                        cache.setImage(CacheFixtures.image(cost: Int(random.next() % 225 + 1) * 4), forKey: key)
                    }
                    index += 1
                    operations.add(1, ordering: .relaxed)
                }
                group.leave()
            }
        }
        // The changes start once every worker runs, so they meet the workers' operations.
        while started.load(ordering: .relaxed) < 4 || operations.load(ordering: .relaxed) < 1_000 { sched_yield() }
        let before = operations.load(ordering: .relaxed)
        // The changer: after each change returns, the cache is within what was just set (stores running
        // meanwhile evict under the same lock, so they can only keep it there). Each change waits (a millisecond at
        // most) until the workers did something since the last one, so the changes and the workers interleave.
        var seen = before
        for step in 0..<2_000 {
            let giveUp = DispatchTime.now().uptimeNanoseconds + 1_000_000
            while operations.load(ordering: .relaxed) == seen, DispatchTime.now().uptimeNanoseconds < giveUp {}
            seen = operations.load(ordering: .relaxed)
            let cost = [0, 500, 5_000, 20_000, 80_000][step % 5]
            let count = [1, 10, 50, 200, Int.max][(step / 5) % 5]
            cache.costLimit = cost
            cache.countLimit = count
            let (total, entries) = (cache.totalCost, cache.count)
            // Another step's limits can't be in force here: only this thread changes them.
            if total > cost || entries > count {
                violations.withLock { $0.append("step \(step): \(total)/\(cost) cost, \(entries)/\(count) entries") }
            }
        }
        let during = operations.load(ordering: .relaxed) - before
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(violations.withLock { $0 }.isEmpty, "\(violations.withLock { $0.prefix(3) })")
        #expect(during > 1_000, "only \(during) operations ran during the 2,000 changes: they hardly met")
        #expect(cache.isConsistent)
        #expect(cache.totalCost <= cache.costLimit && cache.count <= cache.countLimit)
    }
}
