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

    /// Kept data loads (`.refreshStale`) of a few URLs, started in waves across their transfers: every URL is fetched
    /// once. A load whose query missed while an identical load's job was ending takes the bytes that load stored in
    /// memory (before, it started a second transfer); one that joined a transfer says so, once per transfer at most
    /// it did not start.
    @Test func keptDataLoadsThatMissAsATransferEndsTakeItsBytesFromMemory() async throws {
        let directory = CacheFixtures.temporaryDirectory("kept-recheck")
        defer { try? FileManager.default.removeItem(at: directory) }
        let loader = ScriptedLoader(delay: 0.004, acceptsAll: true)
        let urls = (0..<24).map { URL(string: "https://origin.example/kept-\($0).bin")! }
        for url in urls {
            loader.set(
                .data(
                    Data("bytes of \(url.lastPathComponent)".utf8),
                    ResponseMetadata(url: url, statusCode: 200, maxAge: 600)),
                for: url)
        }
        var configuration = MemoryCacheConfiguration(costLimit: 1 << 24)
        configuration.keepsDataAlone = true
        let caches = CachesManager(
            [
                MemoryCache(configuration: configuration),
                DiskCache(configuration: DiskCacheConfiguration(directory: directory)),
            ])
        caches.promotesHits = true
        let manager = ImageManager(cache: caches, loader: loader, coders: CodersManager(coders: []))
        let results = try await withThrowingTaskGroup(of: ImageDataResult.self) { group in
            for wave in 0..<12 {
                for url in urls {
                    group.addTask { try await manager.loadData(with: url, options: .refreshStale) }
                }
                try await Task.sleep(for: .microseconds(700 * wave % 3000))
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == urls.count * 12)
        for result in results {
            #expect(result.data == Data("bytes of \(result.url.lastPathComponent)".utf8))
            if result.cacheType != .none { #expect(!result.joinedTransfer, "a cached answer joined nothing") }
        }
        #expect(loader.requestCount == urls.count, "each URL fetched once")
        let starters = results.filter { $0.cacheType == .none && !$0.joinedTransfer }
        #expect(starters.count == urls.count, "one load started each transfer")
    }

    /// A kept data load stores its bytes as its transfer ends, not when its callback queue gets to it: a load of the
    /// same URL made while the first load's callback queue is busy (here: suspended) is a memory hit, not a second
    /// transfer.
    @Test func keptBytesAreStoredBeforeTheirLoadsCallbackQueueRuns() async throws {
        let loader = ScriptedLoader(acceptsAll: true)
        let url = URL(string: "https://origin.example/queued.bin")!
        let bytes = Data("queued bytes".utf8)
        loader.set(.data(bytes, ResponseMetadata(url: url, statusCode: 200, maxAge: 600)), for: url)
        let (memory, manager) = Self.keptDataManager(loader)
        let queue = DispatchQueue(label: "busy callbacks")
        queue.suspend()
        var context = ImageContext()
        context.callbackQueue = .dispatch(queue)
        let first = Task { try await manager.loadData(with: url, options: .refreshStale, context: context) }
        let key = try #require(manager.cacheKey(for: url))
        #expect(
            await waitUntil(timeout: 5) { memory.data(forKey: key) != nil },
            "stored while the callback queue is suspended")
        let second = try await manager.loadData(with: url, options: .refreshStale)
        #expect(second.cacheType == .memory && second.data == bytes)
        #expect(loader.requestCount == 1)
        queue.resume()
        let firstResult = try await first.value
        #expect(firstResult.cacheType == .none && firstResult.data == bytes && !firstResult.joinedTransfer)
    }

    /// A kept data load with `.fromLoaderOnly` asks the loader even when memory holds fresh bytes for its key: the
    /// look at memory before a transfer starts is the cache's answer, which such a load never takes.
    @Test func aKeptLoadFromTheLoaderOnlyIsNeverAnsweredFromMemory() async throws {
        let loader = ScriptedLoader(acceptsAll: true)
        let url = URL(string: "https://origin.example/loader-only.bin")!
        let bytes = Data("from the loader".utf8)
        loader.set(.data(bytes, ResponseMetadata(url: url, statusCode: 200, maxAge: 600)), for: url)
        let (memory, manager) = Self.keptDataManager(loader)
        let key = try #require(manager.cacheKey(for: url))
        memory.setData(
            Data("kept".utf8),
            metadata: CacheEntryMetadata(
                originalKey: key, maxAge: 600, expiresAt: Date().addingTimeInterval(600), storedAt: Date(), size: 4),
            forKey: key)
        let loaded = try await manager.loadData(with: url, options: [.refreshStale, .fromLoaderOnly])
        #expect(loaded.cacheType == .none && loaded.data == bytes)
        #expect(loader.requestCount == 1)
    }

    /// A manager over one memory level that keeps data alone (what kept data loads store into), with no coder.
    private static func keptDataManager(_ loader: ScriptedLoader) -> (MemoryCache, ImageManager) {
        var configuration = MemoryCacheConfiguration(costLimit: 1 << 24)
        configuration.keepsDataAlone = true
        let memory = MemoryCache(configuration: configuration)
        return (memory, ImageManager(cache: CachesManager([memory]), loader: loader, coders: CodersManager(coders: [])))
    }

}
