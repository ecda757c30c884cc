import Foundation
import ImageTestSupport
import Testing
import WebImage

/// A user's stack with a memory level that keeps bytes (`keepsDataAlone`) and hit promotion: an image manager over
/// it loads as over an image cache. A disk hit is copied up as bytes, the decoded image then replaces them, and
/// the next load is a memory hit with no decode and no download.
@Suite struct BytesMemoryLevelTests {
    @Test func aPromotedDiskHitEndsAsAnImageInMemory() async throws {
        let directory = CacheFixtures.temporaryDirectory("bytes-memory")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "https://origin.example/turned.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(
            .data(try DecoderOptionCachingTests.turnedJPEG(), ResponseMetadata(url: url, statusCode: 200)), for: url)
        let coders = CodersManager(coders: [JPEGCoder.shared])
        let disk = DiskCache(configuration: DiskCacheConfiguration(directory: directory))
        let warm = ImageManager(cache: CachesManager([MemoryCache(), disk]), loader: loader, coders: coders)
        let original = try await warm.loadImage(with: url, options: .waitStoreCache)

        var configuration = MemoryCacheConfiguration(costLimit: 1 << 24)
        configuration.keepsDataAlone = true
        let memory = MemoryCache(configuration: configuration)
        let caches = CachesManager([memory, disk])
        caches.promotesHits = true
        let manager = ImageManager(cache: caches, loader: loader, coders: coders)
        let key = try #require(manager.cacheKey(for: url))
        let fromDisk = try await manager.loadImage(with: url, options: .waitStoreCache)
        #expect(fromDisk.cacheType == .disk)
        #expect(fromDisk.image.width == original.image.width && fromDisk.image.height == original.image.height)
        #expect(memory.image(forKey: key) != nil, "the decoded image replaced the promoted bytes")
        let fromMemory = try await manager.loadImage(with: url)
        #expect(fromMemory.cacheType == .memory)
        #expect(loader.requestCount == 1, "only the warm-up downloaded")
    }

    /// A load that finds the key's bytes alone in memory (a service's entry, or an image store that lost a race)
    /// decodes them once and stores the image: the next load is a memory hit with no decode.
    @Test func bytesAloneInMemoryAreReplacedByTheirImage() async throws {
        let url = URL(string: "https://origin.example/turned.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        var configuration = MemoryCacheConfiguration(costLimit: 1 << 24)
        configuration.keepsDataAlone = true
        let memory = MemoryCache(configuration: configuration)
        let manager = ImageManager(
            cache: CachesManager([memory]), loader: loader, coders: CodersManager(coders: [JPEGCoder.shared]))
        let key = try #require(manager.cacheKey(for: url))
        memory.setData(try DecoderOptionCachingTests.turnedJPEG(), forKey: key)
        let decoded = try await manager.loadImage(with: url, options: .waitStoreCache)
        #expect(decoded.cacheType == .memory && decoded.image.width == 20 && decoded.image.height == 40)
        #expect(memory.image(forKey: key) != nil, "the decode replaced the bytes")
        let hit = try await manager.loadImage(with: url)
        #expect(hit.cacheType == .memory && hit.image === memory.image(forKey: key))
        #expect(loader.requestCount == 0)
    }
}
