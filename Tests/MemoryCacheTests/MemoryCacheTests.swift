import Dispatch
import Foundation
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

@testable import MemoryCache

/// A clock the tests move by hand (monotonic nanoseconds).
final class ManualClock: Sendable {
    private let nanoseconds = Mutex<UInt64>(1_000)
    var now: UInt64 { nanoseconds.withLock { $0 } }
    func advance(seconds: Double) { nanoseconds.withLock { $0 += UInt64(seconds * 1e9) } }
    var closure: @Sendable () -> UInt64 { { self.now } }
}

@Suite("MemoryCache", .timeLimit(.minutes(1)))
struct MemoryCacheTests {
    @Test("least recently used entry is evicted first; a hit refreshes an entry")
    func lruOrder() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 3))
        for key in ["a", "b", "c"] { cache.setImage(CacheFixtures.image(), forKey: key) }
        #expect(cache.keysInLRUOrder == ["c", "b", "a"])
        #expect(cache.image(forKey: "a") != nil)
        #expect(cache.keysInLRUOrder == ["a", "c", "b"])
        cache.setImage(CacheFixtures.image(), forKey: "d")
        #expect(cache.image(forKey: "b") == nil)
        #expect(cache.keysInLRUOrder == ["d", "a", "c"])
        #expect(cache.count == 3)
        #expect(cache.isConsistent)
    }

    @Test("total cost never exceeds the cost limit")
    func costLimit() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 100, maxEntryCost: 100))
        for index in 0..<10 {
            cache.setImage(CacheFixtures.image(cost: 40), forKey: "k\(index)")
            #expect(cache.totalCost <= 100)
        }
        #expect(cache.totalCost == 80)
        #expect(cache.count == 2)
        #expect(cache.image(forKey: "k9") != nil && cache.image(forKey: "k8") != nil)
        #expect(cache.image(forKey: "k7") == nil)
    }

    @Test("replacing an entry adjusts the total cost")
    func replaceAdjustsCost() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1000))
        cache.setImage(CacheFixtures.image(cost: 200), forKey: "k")
        cache.setImage(CacheFixtures.image(cost: 40), forKey: "k")
        #expect(cache.totalCost == 40)
        #expect(cache.count == 1)
        #expect(cache.isConsistent)
    }

    @Test("count limit holds")
    func countLimit() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 30, countLimit: 5))
        for index in 0..<50 { cache.setImage(CacheFixtures.image(), forKey: "k\(index)") }
        #expect(cache.count == 5)
        #expect(cache.keysInLRUOrder == ["k49", "k48", "k47", "k46", "k45"])
    }

    @Test("an entry above the per-entry cap is not stored and drops the older entry of its key")
    func perEntryCap() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1000, maxEntryCost: 64))
        #expect(cache.setImage(CacheFixtures.image(cost: 64), forKey: "small"))
        #expect(cache.setImage(CacheFixtures.image(cost: 32), forKey: "k"))
        #expect(!cache.setImage(CacheFixtures.image(cost: 68), forKey: "k"))
        #expect(cache.image(forKey: "k") == nil)
        #expect(cache.image(forKey: "small") != nil)
        #expect(cache.totalCost == 64)
    }

    @Test("the per-entry cap is never above the cost limit")
    func capBoundedByLimit() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 40, maxEntryCost: 1000))
        #expect(!cache.setImage(CacheFixtures.image(cost: 44), forKey: "k"))
        #expect(cache.count == 0)
    }

    @Test("entries expire after the time-to-live")
    func timeToLive() {
        let clock = ManualClock()
        let cache = MemoryCache(
            configuration: MemoryCacheConfiguration(costLimit: 1 << 20, timeToLive: .seconds(10)),
            clock: clock.closure)
        cache.setImage(CacheFixtures.image(), forKey: "a")
        clock.advance(seconds: 5)
        cache.setImage(CacheFixtures.image(), forKey: "b")
        clock.advance(seconds: 4.9)
        #expect(cache.image(forKey: "a") != nil)
        #expect(cache.contains("a"))
        clock.advance(seconds: 0.2)
        #expect(!cache.contains("a"))
        #expect(cache.image(forKey: "a") == nil)
        #expect(cache.count == 1)
        clock.advance(seconds: 5)
        cache.removeExpired()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.isConsistent)
    }

    @Test("trim(toCost:) keeps the most recently used entries")
    func trimToCost() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        for index in 0..<10 { cache.setImage(CacheFixtures.image(cost: 100), forKey: "k\(index)") }
        _ = cache.image(forKey: "k0")
        cache.trim(toCost: 250)
        #expect(cache.totalCost == 200)
        #expect(Set(cache.keysInLRUOrder) == ["k0", "k9"])
        cache.trim(toCount: 1)
        #expect(cache.keysInLRUOrder == ["k0"])
        cache.trim(toCost: 0)
        #expect(cache.count == 0)
    }

    @Test("removeValue and removeAll empty the cache")
    func removal() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        for index in 0..<5 { cache.setImage(CacheFixtures.image(), forKey: "k\(index)") }
        cache.removeValue(forKey: "k2")
        #expect(cache.image(forKey: "k2") == nil)
        #expect(cache.count == 4)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0)
        cache.setImage(CacheFixtures.image(), forKey: "again")
        #expect(cache.image(forKey: "again") != nil)
        #expect(cache.isConsistent)
    }

    @Test("the weak table serves evicted images that are still referenced, and only those")
    func weakTable() {
        let config = MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 1, shouldUseWeakMemoryCache: true)
        let cache = MemoryCache(configuration: config)
        let held = CacheFixtures.image(value: 1)
        cache.setImage(held, forKey: "held")
        cache.setImage(CacheFixtures.image(value: 2), forKey: "dropped")
        cache.setImage(CacheFixtures.image(value: 3), forKey: "last")
        // "held" and "dropped" were evicted; only "held" is still alive.
        #expect(cache.count == 1)
        #expect(cache.image(forKey: "held") === held)
        #expect(cache.keysInLRUOrder == ["held"])
        #expect(cache.image(forKey: "dropped") == nil)

        let plain = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 1))
        plain.setImage(held, forKey: "held")
        plain.setImage(CacheFixtures.image(), forKey: "other")
        #expect(plain.image(forKey: "held") == nil)
        #expect(plain.weakTableCount == 0)
    }

    @Test("removeValue also forgets the weak-table entry")
    func weakTableRemove() {
        let config = MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 1, shouldUseWeakMemoryCache: true)
        let cache = MemoryCache(configuration: config)
        let held = CacheFixtures.image()
        cache.setImage(held, forKey: "held")
        cache.setImage(CacheFixtures.image(), forKey: "other")
        cache.removeValue(forKey: "held")
        #expect(cache.image(forKey: "held") == nil)
        withExtendedLifetime(held) {}
    }

    @Test("the weak table drops dead references as it grows")
    func weakTablePrunes() {
        let config = MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 1, shouldUseWeakMemoryCache: true)
        let cache = MemoryCache(configuration: config)
        for index in 0..<10_000 { cache.setImage(CacheFixtures.image(), forKey: "k\(index)") }
        #expect(cache.weakTableCount < 200)
    }

    @Test("evicted images are released after the lock is released")
    func releaseOutsideLock() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20, countLimit: 1))
        let observed = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do {
                // The provider's deinit calls back into the cache; under the lock that would deadlock.
                let provider = ReentrantProvider { observed.withLock { $0 = cache.count } }
                let first = CacheFixtures.image()
                let animated = Image(frames: first.frames, frameCount: 2, animatedProvider: provider)
                cache.setImage(animated, forKey: "animated")
            }
            cache.setImage(CacheFixtures.image(), forKey: "evicts")
            done.signal()
        }
        done.wait()
        #expect(observed.withLock { $0 } == 1)
    }

    @Test("many threads using one cache keep it consistent and never return another key's image")
    func concurrentUse() {
        let config = MemoryCacheConfiguration(
            costLimit: 64 * 400, countLimit: 300, maxEntryCost: 64 * 400, timeToLive: .seconds(3600),
            shouldUseWeakMemoryCache: true, keepsData: true)
        let cache = MemoryCache(configuration: config)
        let images = (0..<256).map { CacheFixtures.image(cost: 64, value: UInt8($0)) }
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var seed = UInt64(worker + 1) &* 0x9E37_79B9_7F4A_7C15
            for _ in 0..<20_000 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let keyIndex = Int(seed >> 33) % images.count
                let key = "k\(keyIndex)"
                switch (seed >> 20) % 10 {
                case 0...4:
                    if let image = cache.image(forKey: key), image.pixels.bytes[0] != UInt8(keyIndex) {
                        mismatches.withLock { $0 += 1 }
                    }
                case 5...7: cache.setImage(images[keyIndex], forKey: key, data: Data([UInt8(keyIndex)]))
                case 8: cache.removeValue(forKey: key)
                default: cache.trim(toCost: 64 * 200)
                }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
        #expect(cache.isConsistent)
        #expect(cache.totalCost <= config.costLimit)
        #expect(cache.count <= config.countLimit)
        #expect(cache.totalCost == cache.count * 65)
    }
}

/// An animation provider whose deinit runs a callback (used to prove the cache releases images unlocked).
final class ReentrantProvider: AnimatedImageProvider, Sendable {
    let onDeinit: @Sendable () -> Void
    init(onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
    deinit { onDeinit() }
    var frameCount: Int { 2 }
    var loopCount: Int { 0 }
    var canvasSize: PixelSize { PixelSize(width: 4, height: 4) }
    func duration(at index: Int) -> Double { 0.1 }
    func frame(at index: Int) throws -> ImageFrame { CacheFixtures.image().frames[0] }
}
