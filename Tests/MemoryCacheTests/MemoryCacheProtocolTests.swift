import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import MemoryCache

@Suite("MemoryCache configuration and ImageCacheProtocol")
struct MemoryCacheProtocolTests {
    @Test("a limit file's value: bytes, or nothing for max, v1's huge values and garbage")
    func limitValues() {
        #expect(CgroupMemoryLimit.parseLimit("536870912\n") == 512 << 20)
        #expect(CgroupMemoryLimit.parseLimit("max\n") == nil)
        #expect(CgroupMemoryLimit.parseLimit("9223372036854771712\n") == nil)
        #expect(CgroupMemoryLimit.parseLimit("garbage") == nil)
        #expect(CgroupMemoryLimit.parseLimit("") == nil)
        #expect(CgroupMemoryLimit.parseLimit(" 4096 \n") == 4096)
    }

    @Test("the default cost limit is 20 % of the memory limit, capped at 1 GiB")
    func defaultCostLimit() {
        #expect(MemoryCacheConfiguration.defaultCostLimit(forMemoryLimit: 1000 << 20) == 200 << 20)
        #expect(MemoryCacheConfiguration.defaultCostLimit(forMemoryLimit: 64 << 30) == 1 << 30)
        let config = MemoryCacheConfiguration()
        #expect(config.costLimit > 0 && config.costLimit <= 1 << 30)
        #expect(config.maxEntryCost == config.costLimit / 4)
        #expect(MemoryCache.shared.configuration.costLimit == MemoryCacheConfiguration.defaultCostLimit)
    }

    @Test("protocol calls answer synchronously and act only on the memory level")
    func protocolLevels() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        let image = CacheFixtures.image()
        nonisolated(unsafe) var completed = false
        cache.store(image, data: Data([1]), metadata: nil, forKey: "disk-only", cacheType: .disk) { _ in
            completed = true
        }
        #expect(completed)
        #expect(cache.count == 0)

        cache.store(
            image, data: nil, metadata: CacheEntryMetadata(etag: "e1"), forKey: "k", cacheType: .all, completion: nil)
        nonisolated(unsafe) var result: CacheQueryResult?
        let operation = cache.queryImage(forKey: "k", options: [], context: ImageContext(), cacheType: .memory) {
            result = try? $0.get()
        }
        #expect(operation == nil)
        #expect(result?.image === image)
        #expect(result?.cacheType == .memory)
        #expect(result?.metadata?.etag == "e1")

        nonisolated(unsafe) var diskResult: CacheQueryResult? = CacheQueryResult(cacheType: .none)
        cache.queryImage(forKey: "k", options: [], context: ImageContext(), cacheType: .disk) {
            diskResult = try? $0.get()
        }
        #expect(diskResult == nil)

        nonisolated(unsafe) var levels = ImageCacheType.none
        cache.containsImage(forKey: "k", cacheType: .all) { levels = $0 }
        #expect(levels == .memory)
        cache.containsImage(forKey: "k", cacheType: .disk) { levels = $0 }
        #expect(levels == .none)

        cache.removeImage(forKey: "k", cacheType: .disk, completion: nil)
        #expect(cache.contains("k"))
        cache.removeImage(forKey: "k", cacheType: .memory, completion: nil)
        #expect(!cache.contains("k"))

        cache.store(image, data: nil, metadata: nil, forKey: "k2", cacheType: .memory, completion: nil)
        cache.clear(cacheType: .disk, completion: nil)
        #expect(cache.count == 1)
        cache.clear(cacheType: .memory, completion: nil)
        #expect(cache.count == 0)
    }

    @Test("bytes are kept for queryMemoryData only when keepsData is on, and count towards the cost")
    func keepsData() async throws {
        let bytes = Data(repeating: 9, count: 100)
        let image = CacheFixtures.image(cost: 64)
        let plain = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        try await plain.store(image, data: bytes, forKey: "k", cacheType: .memory)
        let plainHit = try await plain.queryImage(forKey: "k", options: .queryMemoryData)
        #expect(plainHit?.image === image && plainHit?.data == nil)
        #expect(plain.totalCost == 64)

        let keeping = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20, keepsData: true))
        try await keeping.store(image, data: bytes, forKey: "k", cacheType: .memory)
        let hit = try await keeping.queryImage(forKey: "k", options: .queryMemoryData)
        #expect(hit?.data == bytes)
        #expect(keeping.totalCost == 164)
    }

    @Test("a store without an image stores nothing")
    func dataOnlyStore() async throws {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20, keepsData: true))
        try await cache.store(nil, data: Data([1, 2, 3]), forKey: "k", cacheType: .all)
        #expect(cache.count == 0)
        #expect(try await cache.queryImage(forKey: "k") == nil)
    }
}
