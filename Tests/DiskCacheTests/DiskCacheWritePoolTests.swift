import Foundation
import ImageCore
import ImageTestSupport
import MetricsTestKit
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// The write pool: stores of different keys in parallel, one key's stores in call order, a bounded backlog.
/// Every wait here is on an event (a gate reached, a completion called); `.timeLimit` only turns a hang into a
/// failure.
@Suite("DiskCache write pool and backlog", .timeLimit(.minutes(1)))
struct DiskCacheWritePoolTests {
    static func cache(
        _ directory: URL, faults: DiskFaultInjector, writeConcurrency: Int = 2, maxWriteBacklog: Int = 1024,
        maxWriteBacklogBytes: Int = 64 << 20, metrics: TestMetrics? = nil, maxDiskSize: Int = 0
    ) -> DiskCache {
        var config = DiskTest.configuration(directory, maxDiskSize: maxDiskSize, faults: faults)
        config.writeConcurrency = writeConcurrency
        config.maxWriteBacklog = maxWriteBacklog
        config.maxWriteBacklogBytes = maxWriteBacklogBytes
        config.metricsFactory = metrics
        let cache = DiskCache(configuration: config)
        cache.sweep()
        return cache
    }

    /// Collects completions and lets a test wait for a number of them.
    final class Completions: Sendable {
        private let results = Mutex<[(String, Result<Void, ImageError>)]>([])
        private let signal = DispatchSemaphore(value: 0)

        func callback(_ label: String) -> @Sendable (Result<Void, ImageError>) -> Void {
            { result in
                self.results.withLock { $0.append((label, result)) }
                self.signal.signal()
            }
        }

        /// Waits until `count` completions were called in all.
        func wait(untilTotal count: Int) {
            while results.withLock({ $0.count }) < count { signal.wait() }
        }
        var all: [(String, Result<Void, ImageError>)] { results.withLock { $0 } }
        var labels: [String] { all.map(\.0) }
    }

    @Test("a write thread carries the pool's label in the kernel (what profilers show), not its spawner's name")
    func writeThreadsAreNamedAfterThePool() async {
        let pool = DiskWritePool(label: "disk-write-label", maxThreads: 1)
        let name = Mutex<String?>(nil)
        // Spawned from a thread with another name, as an event loop spawns write threads.
        startThreadNamed("spawner-thread") {
            #expect(kernelThreadName() == "spawner-thread")
            pool.submit { name.withLock { $0 = kernelThreadName() } }
        }
        #expect(await waitUntil { name.withLock { $0 } != nil })
        #expect(name.withLock { $0 } == "disk-write-labe")
    }

    @Test("stores of different keys are written at the same time (no single write queue)")
    func parallelStores() throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("pool")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, faults: faults, writeConcurrency: 2)
        let gate = faults.hold(.write)
        let done = Completions()
        cache.store(nil, data: Data([1]), metadata: nil, forKey: "a", cacheType: .disk, completion: done.callback("a"))
        cache.store(nil, data: Data([2]), metadata: nil, forKey: "b", cacheType: .disk, completion: done.callback("b"))
        // Both writers reach the write system call while neither has finished: they run in parallel.
        gate.waitForArrivals(2)
        gate.open()
        done.wait(untilTotal: 2)
        #expect(done.all.allSatisfy { (try? $0.1.get()) != nil })
        #expect(cache.data(forKey: "a") == Data([1]) && cache.data(forKey: "b") == Data([2]))
    }

    @Test("stores of one key land in call order, and a blocking store waits behind a queued one")
    func perKeyOrder() throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("pool")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, faults: faults, writeConcurrency: 4)
        let gate = faults.hold(.write)
        let done = Completions()
        for index in 0..<20 {
            cache.store(
                nil, data: Data([UInt8(index)]), metadata: nil, forKey: "k", cacheType: .disk,
                completion: done.callback("\(index)"))
        }
        gate.waitForArrivals(1)
        // Four pool threads, twenty stores of one key: still only the first one is writing.
        #expect(gate.arrivals == 1)
        #expect(cache.data(forKey: "k") == Data([19]))
        let blockingReturned = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? cache.storeData(Data([99]), forKey: "k")
            blockingReturned.signal()
        }
        gate.open()
        done.wait(untilTotal: 20)
        blockingReturned.wait()
        // Completions may run in any order (each after its write); the writes themselves went one by one.
        #expect(Set(done.labels) == Set((0..<20).map { "\($0)" }))
        #expect(done.all.allSatisfy { (try? $0.1.get()) != nil })
        #expect(gate.arrivals == 21)
        // The blocking store came last in call order: written after all twenty, its bytes stay.
        #expect(cache.data(forKey: "k") == Data([99]))
    }

    @Test("a full backlog drops stores with a typed error and a metric; removals still go through")
    func boundedBacklog() throws {
        let faults = DiskFaultInjector()
        let metrics = TestMetrics()
        let directory = CacheFixtures.temporaryDirectory("pool")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(directory, faults: faults, writeConcurrency: 1, maxWriteBacklog: 3, metrics: metrics)
        try cache.storeData(Data([7]), forKey: "old")
        let gate = faults.hold(.write)
        let done = Completions()
        for index in 0..<10 {
            cache.store(
                nil, data: Data([UInt8(index)]), metadata: nil, forKey: "k\(index)", cacheType: .disk,
                completion: done.callback("k\(index)"))
        }
        cache.store(
            nil, data: Data([8]), metadata: nil, forKey: "old", cacheType: .disk, completion: done.callback("old"))
        // Three taken (one writing, two queued); the other eight failed before store returned.
        let dropped = done.all
        #expect(dropped.map(\.0) == (3..<10).map { "k\($0)" } + ["old"])
        for (_, result) in dropped {
            guard case .failure(let error) = result else {
                Issue.record("a store beyond the backlog was taken")
                continue
            }
            #expect(error.code == .cacheFailure && error.stage == .cacheStore)
            #expect((error.underlying as? DiskCacheWriteBacklogFull)?.queuedJobs == 3)
        }
        #expect(try metrics.expectCounter("webimage_disk_dropped_stores_total").totalValue == 8)
        // Dropped stores are not visible; taken ones are, before they are written; the old entry is intact.
        #expect(cache.data(forKey: "k5") == nil)
        #expect(cache.data(forKey: "k2") == Data([2]))
        #expect(cache.data(forKey: "old") == Data([7]))
        // A removal is never dropped.
        let removed = DispatchSemaphore(value: 0)
        cache.removeImage(forKey: "old", cacheType: .disk) { removed.signal() }
        #expect(cache.data(forKey: "old") == nil)
        gate.open()
        done.wait(untilTotal: 11)
        removed.wait()
        #expect(done.all.count == 11)
        #expect(done.all.filter { (try? $0.1.get()) != nil }.map(\.0).sorted() == ["k0", "k1", "k2"])
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "old").path))
        // Room again: stores are taken.
        cache.store(
            nil, data: Data([1]), metadata: nil, forKey: "later", cacheType: .disk, completion: done.callback("later"))
        done.wait(untilTotal: 12)
        #expect((try? done.all.last?.1.get()) != nil)
    }

    @Test("the byte budget bounds the backlog too")
    func byteBudget() throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("pool")
        defer { DiskTest.removeDirectory(directory) }
        let cache = Self.cache(
            directory, faults: faults, writeConcurrency: 1, maxWriteBacklog: 100, maxWriteBacklogBytes: 10_000)
        let gate = faults.hold(.write)
        let done = Completions()
        for index in 0..<5 {
            cache.store(
                nil, data: Data(count: 4_000), metadata: nil, forKey: "k\(index)", cacheType: .disk,
                completion: done.callback("k\(index)"))
        }
        #expect(done.labels == ["k2", "k3", "k4"])
        gate.open()
        done.wait(untilTotal: 5)
        #expect(done.all.filter { (try? $0.1.get()) != nil }.map(\.0).sorted() == ["k0", "k1"])
    }

    @Test("concurrent blocking writers: every store returns with a sweep that saw it, the limit holds at the end")
    func concurrentWritersKeepTheLimit() throws {
        let directory = CacheFixtures.temporaryDirectory("pool")
        defer { DiskTest.removeDirectory(directory) }
        let limit = 300_000
        let cache = DiskTest.cache(directory, maxDiskSize: limit, sweepAfterBytesWritten: 1 << 30)
        let failures = Mutex(0)
        let overshoot = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<60 {
                let size = 3_000 + (index * 7919 + thread * 31) % 9_000
                do {
                    try cache.storeData(
                        CacheFixtures.bytes(count: size, seed: UInt64(thread * 1000 + index)),
                        forKey: "t\(thread)-\(index)")
                } catch {
                    failures.withLock { $0 += 1 }
                }
                // Other writers may have published entries their sweeps have not covered yet: at most one each.
                let total = cache.totalSize()
                if total > limit + 3 * 12_200 { overshoot.withLock { $0 = max($0, total) } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(overshoot.withLock { $0 } == 0)
        #expect(cache.totalSize() <= limit)
    }
}
