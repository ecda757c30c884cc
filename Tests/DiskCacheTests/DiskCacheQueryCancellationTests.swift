import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Issue 32 defect 11, first half, with the real caches: a cancelled query ends `cancelled`, never with the disk
/// hit (or the memory hit) it would have found. The disk read is held at its `open` by the fault seam.
@Suite("DiskCache query cancellation", .timeLimit(.minutes(1)))
struct DiskCacheQueryCancellationTests {
    static func expectCancelled(_ result: Result<CacheQueryResult?, any Error>) {
        switch result {
        case .success(let hit): Issue.record("a cancelled query ended with success: \(String(describing: hit?.data))")
        case .failure(let error):
            let imageError = error as? ImageError
            #expect(imageError?.code == .cancelled && imageError?.stage == .cacheQuery, "\(error)")
        }
    }

    /// A cache holding `k`, with one read thread (reads run in submission order).
    static func cache(faults: DiskFaultInjector) throws -> DiskCache {
        var config = DiskTest.configuration(CacheFixtures.temporaryDirectory("disk-cancel"), faults: faults)
        config.readConcurrency = 1
        let cache = DiskCache(configuration: config)
        try cache.storeData(Data([1, 2, 3]), forKey: "k")
        return cache
    }

    @Test("async queryImage cancelled while the disk read runs throws cancelled, not the hit")
    func asyncDiskQuery() async throws {
        let faults = DiskFaultInjector()
        let cache = try Self.cache(faults: faults)
        defer { DiskTest.removeDirectory(cache.directory) }
        let gate = faults.hold(.open)
        let task = Task { try await cache.queryImage(forKey: "k", cacheType: .disk) }
        #expect(await waitUntil { gate.arrivals == 1 })
        task.cancel()
        // The read finds the entry only after the cancel.
        gate.open()
        Self.expectCancelled(await task.result)
        #expect(try await cache.queryImage(forKey: "k", cacheType: .disk)?.data == Data([1, 2, 3]))
    }

    @Test(
        "DiskCache's own operation keeps the cancel contract: cancelled during the read, the completion gets cancelled before cancel() returns, once"
    )
    func callbackDiskQuery() async throws {
        let faults = DiskFaultInjector()
        let cache = try Self.cache(faults: faults)
        defer { DiskTest.removeDirectory(cache.directory) }
        let gate = faults.hold(.open)
        let answers = Mutex<[Result<CacheQueryResult?, ImageError>]>([])
        let operation = cache.queryImage(forKey: "k", options: [], context: ImageContext(), cacheType: .disk) {
            result in answers.withLock { $0.append(result) }
        }
        #expect(await waitUntil { gate.arrivals == 1 })
        operation?.cancel()
        let atCancel = answers.withLock { $0 }
        #expect(atCancel.count == 1)
        if case .failure(let error)? = atCancel.first {
            #expect(error.code == .cancelled && error.stage == .cacheQuery)
        } else {
            Issue.record("the completion must get cancelled at the cancel: \(atCancel)")
        }
        gate.open()
        // One read thread: this query runs after the held one has finished.
        #expect(try await cache.queryImage(forKey: "k", cacheType: .disk)?.data == Data([1, 2, 3]))
        #expect(answers.withLock { $0.count } == 1, "the answer found after the cancel is dropped")
    }

    @Test("through CachesManager([MemoryCache, DiskCache]): a memory miss, then a held disk read, cancelled: cancelled")
    func cachesManagerQuery() async throws {
        let faults = DiskFaultInjector()
        let disk = try Self.cache(faults: faults)
        defer { DiskTest.removeDirectory(disk.directory) }
        let caches = CachesManager([MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20)), disk])
        let gate = faults.hold(.open)
        let task = Task { try await caches.queryImage(forKey: "k") }
        #expect(await waitUntil { gate.arrivals == 1 })
        task.cancel()
        gate.open()
        Self.expectCancelled(await task.result)
    }

    @Test("MemoryCache: a cancelled task's query throws cancelled, though the hit is at hand")
    func memoryQuery() async throws {
        let memory = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        memory.store(CacheFixtures.image(), data: nil, metadata: nil, forKey: "k", cacheType: .memory, completion: nil)
        #expect(try await memory.queryImage(forKey: "k")?.image != nil)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await memory.queryImage(forKey: "k")
        }
        Self.expectCancelled(await task.result)
    }
}
