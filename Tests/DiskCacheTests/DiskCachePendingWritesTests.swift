import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import PropertyBased
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Issue 32 item 13: `DiskCache` can be waited on for its pending writes, so a short program can exit without
/// losing them. Every wait here is on an event; `.timeLimit` only turns a hang into a failure.
@Suite("DiskCache pending writes", .timeLimit(.minutes(2)))
struct DiskCachePendingWritesTests {
    static func cache(_ directory: URL, faults: DiskFaultInjector? = nil, writeConcurrency: Int = 2) -> DiskCache {
        var config = DiskTest.configuration(directory, faults: faults)
        config.writeConcurrency = writeConcurrency
        let cache = DiskCache(configuration: config)
        cache.sweep()
        return cache
    }

    /// An ordered log of completions.
    final class Log: Sendable {
        private let events = Mutex<[String]>([])
        private let signal = DispatchSemaphore(value: 0)
        func append(_ event: String) {
            events.withLock { $0.append(event) }
            signal.signal()
        }
        func wait(untilCount count: Int) {
            while events.withLock({ $0.count }) < count { signal.wait() }
        }
        var all: [String] { events.withLock { $0 } }
    }

    @Test(
        "waitForPendingWrites calls back only after every earlier store is written and completed; another instance then reads them all"
    )
    func waitsForEarlierStores() throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("disk-flush")
        defer { DiskTest.removeDirectory(directory) }
        // Threads for the three stores and the later one, all held at the write at once.
        let cache = Self.cache(directory, faults: faults, writeConcurrency: 4)
        let log = Log()
        // Only the start-up sweep was submitted, and it is done (or about to settle).
        cache.waitForPendingWrites { log.append("idle wait") }
        log.wait(untilCount: 1)

        let gate = faults.hold(.write)
        for index in 0..<3 {
            cache.store(
                nil, data: CacheFixtures.bytes(count: 1000 + index, seed: UInt64(index)), metadata: nil,
                forKey: "k\(index)", cacheType: .disk
            ) { _ in log.append("stored k\(index)") }
        }
        cache.waitForPendingWrites { log.append("flushed") }
        gate.waitForArrivals(3)
        // A store made after the wait is not held up by it: it reaches the write beside the others.
        cache.store(nil, data: Data([9]), metadata: nil, forKey: "later", cacheType: .disk) { _ in
            log.append("stored later")
        }
        gate.waitForArrivals(4)
        gate.open()
        log.wait(untilCount: 6)
        let events = log.all
        let flushed = try #require(events.firstIndex(of: "flushed"))
        for index in 0..<3 {
            let stored = try #require(events.firstIndex(of: "stored k\(index)"))
            #expect(stored < flushed, "\(events)")
        }

        // Another process: a fresh instance over the same directory.
        let other = Self.cache(directory)
        for index in 0..<3 {
            #expect(other.data(forKey: "k\(index)") == CacheFixtures.bytes(count: 1000 + index, seed: UInt64(index)))
        }
    }

    @Test("the await form, and through a CachesManager: returns after the disk level's earlier stores")
    func awaitFormThroughCachesManager() async throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("disk-flush")
        defer { DiskTest.removeDirectory(directory) }
        let disk = Self.cache(directory, faults: faults)
        let caches = CachesManager([MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20)), disk])
        let log = Log()
        let gate = faults.hold(.write)
        caches.store(CacheFixtures.image(), data: Data([1, 2, 3]), metadata: nil, forKey: "k", cacheType: .all) {
            _ in log.append("stored")
        }
        let waiter = Task {
            await caches.waitForPendingWrites()
            log.append("flushed")
        }
        #expect(await waitUntil { gate.arrivals == 1 })
        gate.open()
        await waiter.value
        #expect(log.all == ["stored", "flushed"])
        #expect(Self.cache(directory).data(forKey: "k") == Data([1, 2, 3]))

        // The same through the cache alone.
        disk.store(nil, data: Data([4]), metadata: nil, forKey: "k2", cacheType: .disk, completion: nil)
        await disk.waitForPendingWrites()
        #expect(Self.cache(directory).data(forKey: "k2") == Data([4]))
    }

    /// One operation of a burst.
    enum Operation: Sendable, CustomStringConvertible {
        case store(key: Int, bytes: Int, seed: UInt64)
        case remove(key: Int)
        case clear
        case blockingStore(key: Int, seed: UInt64)

        var description: String {
            switch self {
            case .store(let key, let bytes, let seed): "store(k\(key), \(bytes) B, \(seed))"
            case .remove(let key): "remove(k\(key))"
            case .clear: "clear"
            case .blockingStore(let key, let seed): "storeData(k\(key), \(seed))"
            }
        }
    }

    static let operationGenerator = zip(Gen.int(in: 0...19), Gen.int(in: 0...5), Gen.uint64()).map {
        roll, key, seed -> Operation in
        switch roll {
        case 0: .clear
        case 1...3: .remove(key: key)
        case 4: .blockingStore(key: key, seed: seed)
        default: .store(key: key, bytes: Int(seed % 3000), seed: seed)
        }
    }

    @Test(
        "property: after random bursts of stores, removals and clears, waitForPendingWrites leaves on disk exactly what the calls asked for"
    )
    func randomBursts() async throws {
        let cases = Atomic<Int>(0)
        let operations = Atomic<Int>(0)
        print("DiskCache pending-writes property: 60 random bursts (a failure prints the seed to replay it)")
        await propertyCheck(count: 60, input: Self.operationGenerator.array(of: 1...40), Gen.int(in: 1...4)) {
            burst, threads in
            cases.add(1, ordering: .relaxed)
            operations.add(burst.count, ordering: .relaxed)
            let directory = CacheFixtures.temporaryDirectory("disk-burst")
            defer { DiskTest.removeDirectory(directory) }
            let cache = Self.cache(directory, writeConcurrency: threads)
            var model: [Int: Data] = [:]
            for operation in burst {
                switch operation {
                case .store(let key, let bytes, let seed):
                    let data = CacheFixtures.bytes(count: bytes, seed: seed)
                    cache.store(nil, data: data, metadata: nil, forKey: "k\(key)", cacheType: .disk, completion: nil)
                    model[key] = data
                case .remove(let key):
                    cache.removeImage(forKey: "k\(key)", cacheType: .disk, completion: nil)
                    model[key] = nil
                case .clear:
                    cache.clear(cacheType: .disk, completion: nil)
                    model = [:]
                case .blockingStore(let key, let seed):
                    let data = CacheFixtures.bytes(count: 100, seed: seed)
                    try? cache.storeData(data, forKey: "k\(key)")
                    model[key] = data
                }
            }
            await cache.waitForPendingWrites()
            // What another process finds now, without this instance's queued state.
            let other = DiskCache(configuration: DiskTest.configuration(directory))
            for key in 0...5 {
                #expect(other.data(forKey: "k\(key)") == model[key], "k\(key) after \(burst)")
            }
        }
        print(
            "DiskCache pending-writes property: \(cases.load(ordering: .relaxed)) bursts, \(operations.load(ordering: .relaxed)) operations"
        )
    }
}
