import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// The two-level cache (memory, then disk) built from the two plugins through ImageCore's `CachesManager`.
@Suite("Two-level cache through CachesManager", .timeLimit(.minutes(1)))
struct TwoLevelCacheTests {
    static func makeCaches(_ directory: URL) -> (MemoryCache, DiskCache, CachesManager) {
        let memory = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        let disk = DiskTest.cache(directory, maxDiskSize: 1 << 20)
        return (memory, disk, CachesManager([memory, disk]))
    }

    @Test("store goes to both levels; a query asks memory first, then disk")
    func serialQuery() async throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        let (memory, disk, caches) = Self.makeCaches(directory)
        let image = CacheFixtures.image()
        let bytes = Data("png bytes".utf8)
        try await caches.store(image, data: bytes, metadata: CacheEntryMetadata(etag: "e"), forKey: "k.png")
        #expect(memory.image(forKey: "k.png") === image)
        #expect(disk.data(forKey: "k.png") == bytes)

        let fromMemory = try #require(try await caches.queryImage(forKey: "k.png"))
        #expect(fromMemory.cacheType == .memory)
        #expect(fromMemory.image === image)

        memory.removeAll()
        let fromDisk = try #require(try await caches.queryImage(forKey: "k.png"))
        #expect(fromDisk.cacheType == .disk)
        #expect(fromDisk.image == nil)
        #expect(fromDisk.data == bytes)
        #expect(fromDisk.metadata?.etag == "e")

        // The manager promotes a decoded disk hit with data: nil, cacheType: .memory.
        try await caches.store(image, data: nil, forKey: "k.png", cacheType: .memory)
        #expect(try await caches.queryImage(forKey: "k.png")?.cacheType == .memory)
        #expect(await caches.containsImage(forKey: "k.png") == .memory)
    }

    @Test("with promotion, a disk hit is copied to a bytes-keeping memory level and the next query stops there")
    func promotionToBytesMemory() async throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        var configuration = MemoryCacheConfiguration(costLimit: 1 << 20)
        configuration.keepsDataAlone = true
        let memory = MemoryCache(configuration: configuration)
        let disk = DiskTest.cache(directory, maxDiskSize: 1 << 20)
        let caches = CachesManager([memory, disk])
        caches.promotesHits = true
        let bytes = Data("encoded thumbnail".utf8)
        try await caches.store(nil, data: bytes, metadata: CacheEntryMetadata(etag: "e"), forKey: "k", cacheType: .disk)
        #expect(memory.count == 0)

        let fromDisk = try #require(try await caches.queryImage(forKey: "k"))
        #expect(fromDisk.cacheType == .disk && fromDisk.answeredBy == 1 && fromDisk.data == bytes)
        #expect(memory.data(forKey: "k")?.data == bytes && memory.data(forKey: "k")?.metadata?.etag == "e")
        #expect(memory.totalCost == bytes.count)

        let fromMemory = try #require(try await caches.queryImage(forKey: "k"))
        #expect(fromMemory.cacheType == .memory && fromMemory.answeredBy == 0)
        #expect(fromMemory.image == nil && fromMemory.data == bytes && fromMemory.metadata?.etag == "e")

        // An image manager then stores the decoded image for the key: it replaces the bytes entry.
        let image = CacheFixtures.image()
        try await caches.store(image, data: nil, forKey: "k", cacheType: .memory)
        #expect(memory.image(forKey: "k") === image && memory.totalCost == image.memoryCost)
    }

    @Test("queryMemoryData continues to disk for the bytes of a memory hit")
    func queryMemoryData() async throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        let (_, _, caches) = Self.makeCaches(directory)
        let image = CacheFixtures.image()
        try await caches.store(image, data: Data([7]), forKey: "k")
        let hit = try #require(try await caches.queryImage(forKey: "k", options: .queryMemoryData))
        #expect(hit.image === image)
        #expect(hit.data == Data([7]))
        #expect(hit.cacheType == .memory, "the level that answered with the image; the bytes came from below")
    }

    @Test("queryCacheType and storeCacheType limit the levels touched")
    func cacheTypes() async throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        let (memory, disk, caches) = Self.makeCaches(directory)
        let image = CacheFixtures.image()

        try await caches.store(image, data: Data([1]), forKey: "memory-only", cacheType: .memory)
        #expect(memory.contains("memory-only"))
        #expect(!disk.containsData(forKey: "memory-only"))

        try await caches.store(image, data: Data([2]), forKey: "disk-only", cacheType: .disk)
        #expect(!memory.contains("disk-only"))
        #expect(disk.data(forKey: "disk-only") == Data([2]))

        #expect(try await caches.queryImage(forKey: "disk-only", cacheType: .memory) == nil)
        #expect(try await caches.queryImage(forKey: "disk-only", cacheType: .disk)?.cacheType == .disk)
        #expect(try await caches.queryImage(forKey: "memory-only", cacheType: .disk) == nil)
        #expect(await caches.containsImage(forKey: "disk-only", cacheType: .all) == .disk)
        #expect(await caches.containsImage(forKey: "disk-only", cacheType: .memory) == .none)

        await caches.removeImage(forKey: "disk-only", cacheType: .memory)
        #expect(disk.containsData(forKey: "disk-only"))
        await caches.removeImage(forKey: "disk-only", cacheType: .disk)
        #expect(!disk.containsData(forKey: "disk-only"))

        await caches.clear(cacheType: .disk)
        #expect(memory.contains("memory-only"))
        #expect(disk.totalCount() == 0)
    }

    @Test("queryDiskDataSync answers before queryImage returns; otherwise the disk answers later")
    func syncQuery() throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        let (_, disk, caches) = Self.makeCaches(directory)
        try disk.storeData(Data([5]), forKey: "k")
        let answered = Mutex<Data?>(nil)
        caches.queryImage(forKey: "k", options: .queryDiskDataSync, context: ImageContext(), cacheType: .all) {
            let data = try? $0.get()?.data
            answered.withLock { $0 = data }
        }
        #expect(answered.withLock { $0 } == Data([5]))

        let waiter = DispatchSemaphore(value: 0)
        let thread = Mutex<Bool?>(nil)
        let caller = pthread_self()
        disk.queryImage(forKey: "k", options: [], context: ImageContext(), cacheType: .disk) { _ in
            thread.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 }
            waiter.signal()
        }
        waiter.wait()
        #expect(thread.withLock { $0 } == false)
    }

    @Test("a queued store is visible to queries at once; a queued removal hides the entry at once")
    func readYourWrites() throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        let disk = DiskTest.cache(directory)
        let stored = DispatchSemaphore(value: 0)
        for index in 0..<50 {
            disk.store(nil, data: Data([UInt8(index)]), metadata: nil, forKey: "k\(index)", cacheType: .disk) { _ in
                stored.signal()
            }
            #expect(disk.data(forKey: "k\(index)") == Data([UInt8(index)]))
        }
        disk.removeImage(forKey: "k0", cacheType: .disk, completion: nil)
        #expect(disk.data(forKey: "k0") == nil)
        disk.clear(cacheType: .disk, completion: nil)
        #expect(disk.data(forKey: "k1") == nil)
        disk.store(nil, data: Data([99]), metadata: nil, forKey: "after", cacheType: .disk, completion: nil)
        #expect(disk.data(forKey: "after") == Data([99]))
        disk.sweep()
        #expect(disk.data(forKey: "k1") == nil)
        #expect(disk.data(forKey: "after") == Data([99]))
        #expect(disk.totalCount() == 1)
        for _ in 0..<50 { stored.wait() }
    }

    @Test("a restarted two-level cache hits the disk, then memory after promotion")
    func restart() async throws {
        let directory = CacheFixtures.temporaryDirectory("two")
        defer { DiskTest.removeDirectory(directory) }
        do {
            let (_, _, caches) = Self.makeCaches(directory)
            try await caches.store(CacheFixtures.image(), data: Data([4, 2]), forKey: "k")
        }
        let (memory, _, caches) = Self.makeCaches(directory)
        let hit = try #require(try await caches.queryImage(forKey: "k"))
        #expect(hit.cacheType == .disk && hit.data == Data([4, 2]))
        try await caches.store(CacheFixtures.image(), data: nil, forKey: "k", cacheType: .memory)
        #expect(memory.contains("k"))
    }
}
