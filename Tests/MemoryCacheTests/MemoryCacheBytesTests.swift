import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import MemoryCache

/// Entries of bytes alone (`setData`, and `store(nil, data:…)` with `keepsDataAlone`): what a service keeps when its
/// product is encoded bytes. They share the LRU order, the cost limit and the per-entry cap with images.
@Suite("MemoryCache bytes entries", .timeLimit(.minutes(1)))
struct MemoryCacheBytesTests {
    @Test("an entry of bytes alone costs its bytes, is found as bytes with its metadata, and has no image")
    func bytesEntry() throws {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1000, maxEntryCost: 1000))
        let metadata = CacheEntryMetadata(originalKey: "k", contentType: "image/webp", etag: "\"e\"")
        #expect(cache.setData(Data(repeating: 1, count: 300), metadata: metadata, forKey: "k"))
        #expect(cache.totalCost == 300)
        let found = try #require(cache.data(forKey: "k"))
        #expect(found.data.count == 300 && found.metadata?.etag == "\"e\"")
        #expect(cache.image(forKey: "k") == nil && cache.entry(forKey: "k") == nil)
        #expect(cache.contains("k"))
        cache.setData(Data(repeating: 2, count: 100), forKey: "k")
        #expect(cache.totalCost == 100 && cache.count == 1 && cache.isConsistent)
    }

    @Test("bytes and images share one LRU order and one cost limit")
    func sharedLimits() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 200, maxEntryCost: 200))
        cache.setData(Data(count: 80), forKey: "bytes")
        cache.setImage(CacheFixtures.image(cost: 80), forKey: "image")
        _ = cache.data(forKey: "bytes")  // now the most recently used
        cache.setData(Data(count: 80), forKey: "more")
        #expect(cache.keysInLRUOrder == ["more", "bytes"], "the image was the least recently used")
        #expect(cache.totalCost == 160 && cache.isConsistent)
    }

    @Test("bytes above the per-entry cap are not kept and drop the older entry of their key")
    func perEntryCap() {
        let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 800, maxEntryCost: 100))
        cache.setData(Data(count: 50), forKey: "k")
        #expect(!cache.setData(Data(count: 101), forKey: "k"))
        #expect(cache.data(forKey: "k") == nil && cache.totalCost == 0)
        let none = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 0))
        #expect(!none.setData(Data(count: 1), forKey: "k"), "a budget of 0 keeps nothing")
    }

    @Test("the protocol stores bytes without an image only with keepsDataAlone, and answers them with no image")
    func protocolBytes() async throws {
        let plain = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1000))
        try await plain.store(nil, data: Data([1, 2]), forKey: "k", cacheType: .all)
        #expect(plain.count == 0, "an image cache ignores bytes without an image")

        var configuration = MemoryCacheConfiguration(costLimit: 1000)
        configuration.keepsDataAlone = true
        let bytes = MemoryCache(configuration: configuration)
        try await bytes.store(nil, data: Data([1, 2]), forKey: "k", cacheType: .disk)
        #expect(bytes.count == 0, "a store without the memory level leaves memory alone")
        try await bytes.store(
            nil, data: Data([1, 2]), metadata: CacheEntryMetadata(originalKey: "k", etag: "\"t\""), forKey: "k",
            cacheType: .all)
        let hit = try #require(try await bytes.queryImage(forKey: "k"))
        #expect(
            hit.image == nil && hit.data == Data([1, 2]) && hit.metadata?.etag == "\"t\"" && hit.cacheType == .memory)
        guard
            case .hit(let sync) = bytes.queryImageSync(
                forKey: "k", options: [], context: ImageContext(), cacheType: .all)
        else {
            Issue.record("the synchronous query missed")
            return
        }
        #expect(sync.image == nil && sync.data == Data([1, 2]))
        #expect(try await bytes.queryImage(forKey: "k", cacheType: .disk) == nil)
    }

    /// For random sequences of image stores, byte stores, lookups and removals, the cache holds exactly what a
    /// plain LRU list with the same limits holds, in the same order, at the same total cost.
    @Test("mixed entries follow a plain LRU reference model")
    func referenceModel() {
        let seed = SplitMix64.seed(from: "MODEL_SEED", label: "MemoryCache bytes reference model")
        var random = SplitMix64(seed: seed)
        for _ in 0..<40 {
            let costLimit = Int(random.next() % 600) + 1
            let maxEntry = Int(random.next() % UInt64(costLimit)) + 1
            let countLimit = Int(random.next() % 8) + 1
            let cache = MemoryCache(
                configuration: MemoryCacheConfiguration(
                    costLimit: costLimit, countLimit: countLimit, maxEntryCost: maxEntry))
            var model: [(key: String, cost: Int, isImage: Bool)] = []  // most recent first
            for _ in 0..<120 {
                let key = "k\(random.next() % 10)"
                switch random.next() % 5 {
                case 0, 1:
                    let isImage = random.next() % 2 == 0
                    let cost = Int(random.next() % 40 + 1) * 4
                    let stored =
                        isImage
                        ? cache.setImage(CacheFixtures.image(cost: cost), forKey: key)
                        : cache.setData(Data(count: cost), forKey: key)
                    model.removeAll { $0.key == key }
                    #expect(stored == (cost <= min(maxEntry, costLimit)), "seed \(seed)")
                    if stored { model.insert((key, cost, isImage), at: 0) }
                    while model.reduce(0, { $0 + $1.cost }) > costLimit || model.count > countLimit {
                        model.removeLast()
                    }
                case 2, 3:
                    let inModel = model.firstIndex { $0.key == key }
                    let found = cache.data(forKey: key) != nil || cache.image(forKey: key) != nil
                    #expect(found == (inModel != nil), "seed \(seed): lookup of \(key)")
                    if let inModel { model.insert(model.remove(at: inModel), at: 0) }
                default:
                    cache.removeValue(forKey: key)
                    model.removeAll { $0.key == key }
                }
                #expect(cache.keysInLRUOrder == model.map(\.key), "seed \(seed)")
                #expect(cache.totalCost == model.reduce(0) { $0 + $1.cost }, "seed \(seed)")
                #expect(cache.isConsistent, "seed \(seed)")
            }
        }
    }
}
