import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A cache entry that can't be decoded is a miss: removed, fetched again, counted — never a permanent failure.
@Suite struct CacheHealingTests {
    static let brokenEntries: [(name: String, bytes: Data)] = [
        ("unknown format (noCoder)", Data("<html>oops</html>".utf8)),
        ("overwritten in place (badImageData)", Data("TIMG".utf8) + Data([0, 9, 0])),
        ("empty", Data()),
    ]

    @Test(arguments: brokenEntries.indices)
    func anUndecodableDiskEntryIsRemovedAndDownloadedAgain(_ index: Int) async throws {
        let rig = Rig()
        let url = testURL()
        let good = rig.serve(url, width: 9, height: 9)
        rig.cache.seedDisk(Self.brokenEntries[index].bytes, forKey: url.absoluteString)
        let healed = try await rig.load(url, options: .waitStoreCache).get()
        #expect(healed.image.width == 9 && healed.cacheType == .none)
        #expect(rig.loader.requestCount == 1)
        #expect(rig.cache.diskData(forKey: url.absoluteString) == good, "the entry was replaced by the download")
        #expect(rig.manager.statistics.removedUndecodableCacheEntries == 1)
        #expect(!rig.manager.isFailedURL(url), "a bad cache file says nothing about the URL")
    }

    @Test func aNewManagerOverTheSameBrokenCacheHealsItToo() async throws {
        let cache = RecordingCache()
        let loader = ScriptedLoader()
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 4, height: 4), ResponseMetadata(url: url, statusCode: 200)), for: url)
        cache.seedDisk(Data("garbage".utf8), forKey: url.absoluteString)
        for _ in 0..<2 {
            let manager = ImageManager(cache: cache, loader: loader, coders: CodersManager(coders: [TestCoder()]))
            manager.logHandler = { _ in }
            let result = try await manager.loadImage(with: url, options: .waitStoreCache)
            #expect(result.image.width == 4)
        }
        #expect(loader.requestCount == 1, "the second manager found the healed entry")
    }

    @Test func aBrokenOriginalEntryOfATransformedLoadIsDownloadedAgain() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 10, height: 10)
        rig.cache.seedDisk(Data("TIMG".utf8), forKey: url.absoluteString)
        let grow = CompoundingTransformer(.grow(1))
        let result = try await rig.load(url, options: .waitStoreCache, context: [.imageTransformer: grow]).get()
        #expect(result.image.width == 11)
        #expect(rig.loader.requestCount == 1)
        #expect(rig.manager.statistics.removedUndecodableCacheEntries == 1)
    }

    @Test func aBrokenEntryOfARevalidatingLoadIsRevalidatedAsAbsent() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 6, height: 6, etag: "\"v1\"")
        rig.cache.seedDisk(
            Data("broken".utf8), metadata: CacheEntryMetadata(etag: "\"v1\""), forKey: url.absoluteString)
        let result = try await rig.load(url, options: .refreshCached).get()
        #expect(result.image.width == 6 && !result.isNotModified)
        let request = try #require(rig.loader.requests.first)
        #expect(request.context.loaderCachedMetadata == nil, "no validators of the removed entry are sent")
    }

    @Test func manyLoadsOfOneBrokenEntryShareOneRemovalAndOneDownload() async throws {
        let rig = Rig(loaderDelay: 0.05)
        let url = testURL()
        rig.serve(url, width: 5, height: 5)
        rig.cache.seedDisk(Data("x".utf8), forKey: url.absoluteString)
        let recorders = (0..<20).map { _ in DeliveryRecorder() }
        for recorder in recorders {
            rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        }
        for recorder in recorders {
            let result = try #require(await recorder.waitForFinal()).get()
            #expect(result.image.width == 5)
        }
        #expect(rig.loader.requestCount == 1)
    }
}
