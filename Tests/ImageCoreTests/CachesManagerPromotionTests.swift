import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// `CacheQueryResult.answeredBy` and `CachesManager.promotesHits`: the manager names the cache that answered and,
/// when asked to, copies a lower cache's hit to the caches above it — the layering a service needs, so it keeps no
/// layered cache of its own.
@Suite struct CachesManagerPromotionTests {
    private func image(_ width: Int) -> Image {
        Image(pixels: PixelBuffer(width: width, height: 1, layout: .gray8, bytes: [UInt8](repeating: 1, count: width)))
    }

    private func stores(_ cache: RecordingCache) -> [RecordingCache.Call] {
        cache.calls.filter { if case .store = $0 { true } else { false } }
    }

    @Test func answeredByNamesThePositionOfTheCacheThatAnswered() async throws {
        let caches = [RecordingCache(), RecordingCache(), RecordingCache()]
        caches[2].seedDisk(Data([7]), forKey: "k")
        let manager = CachesManager(caches)
        #expect(try await manager.queryImage(forKey: "k")?.answeredBy == 2)
        manager.queryPolicy = .concurrent
        #expect(try await manager.queryImage(forKey: "k")?.answeredBy == 2)
        manager.queryPolicy = .lowestOnly
        #expect(try await manager.queryImage(forKey: "k")?.answeredBy == 2, "a position in the whole list")
        manager.queryPolicy = .serial
        caches[1].seedMemory(image(1), forKey: "k")
        #expect(try await manager.queryImage(forKey: "k")?.answeredBy == 1)
        guard
            case .hit(let hit) = manager.queryImageSync(
                forKey: "k", options: [], context: ImageContext(), cacheType: .memory)
        else {
            Issue.record("the synchronous query missed")
            return
        }
        #expect(hit.answeredBy == 1)
        #expect(try await caches[2].queryImage(forKey: "k")?.answeredBy == nil, "a cache asked on its own names none")
    }

    @Test func aPromotedHitIsStoredOnTheCachesAboveItOnly() async throws {
        let caches = [RecordingCache(), RecordingCache(), RecordingCache()]
        let metadata = CacheEntryMetadata(originalKey: "k", etag: "\"v1\"")
        caches[2].seedDisk(Data([7, 8]), metadata: metadata, forKey: "k")
        let manager = CachesManager(caches)
        _ = try await manager.queryImage(forKey: "k")
        #expect(caches.allSatisfy { stores($0).isEmpty }, "off by default")

        manager.promotesHits = true
        let hit = try await manager.queryImage(forKey: "k")
        #expect(hit?.data == Data([7, 8]) && hit?.answeredBy == 2)
        for cache in caches[..<2] {
            #expect(stores(cache) == [.store(key: "k", hasImage: false, hasData: true, cacheType: .all)])
            #expect(await waitUntil { cache.diskData(forKey: "k") == Data([7, 8]) })
            #expect(cache.diskMetadata(forKey: "k")?.etag == "\"v1\"", "the metadata goes with the bytes")
        }
        #expect(stores(caches[2]).isEmpty)
        // The next query stops at the first cache, which now has the bytes.
        #expect(try await manager.queryImage(forKey: "k")?.answeredBy == 0)
    }

    @Test func bytesALowerCacheAddedAreNotCopied() async throws {
        let caches = [RecordingCache(), RecordingCache(), RecordingCache()]
        caches[1].seedMemory(image(3), forKey: "k")
        caches[2].seedDisk(Data([9]), forKey: "k")
        let manager = CachesManager(caches)
        manager.promotesHits = true
        let hit = try #require(try await manager.queryImage(forKey: "k", options: .queryMemoryData, cacheType: .all))
        #expect(hit.image?.width == 3 && hit.data == Data([9]) && hit.answeredBy == 1)
        #expect(stores(caches[0]) == [.store(key: "k", hasImage: true, hasData: false, cacheType: .all)])
        #expect(stores(caches[1]).isEmpty && stores(caches[2]).isEmpty)
    }
}
