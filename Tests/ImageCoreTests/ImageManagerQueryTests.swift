import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct ImageManagerQueryTests {
    @Test func memoryHitEndsWithoutADiskReadAndBeforeLoadImageReturns() async throws {
        let rig = Rig()
        let url = testURL()
        let image = try TestCoder().decode(TestCoder.data(width: 5, height: 5), options: ImageDecodeOptions())
        rig.cache.seedMemory(image, forKey: url.absoluteString)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        let result = try #require(recorder.final, "completed synchronously").get()
        #expect(result.cacheType == .memory)
        #expect(result.image === image)
        #expect(rig.cache.diskReads == 0)
        #expect(rig.loader.requestCount == 0)
        #expect(!rig.manager.isRunning)
    }

    @Test func queryMemoryDataAlsoReadsTheBytes() async throws {
        let rig = Rig()
        let url = testURL()
        let data = TestCoder.data(width: 5, height: 5)
        rig.cache.seedMemory(try TestCoder().decode(data, options: ImageDecodeOptions()), forKey: url.absoluteString)
        rig.cache.seedDisk(data, forKey: url.absoluteString)
        let result = try await rig.load(url, options: .queryMemoryData).get()
        #expect(result.cacheType == .memory)
        #expect(result.data == data)
        #expect(rig.cache.diskReads == 1)
    }

    @Test func diskHitIsDecodedOffTheIOQueueAndPromotedToMemory() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        rig.cache.seedDisk(TestCoder.data(width: 6, height: 4), forKey: key)
        let result = try await rig.load(url).get()
        #expect(result.cacheType == .disk)
        #expect(result.image.width == 6)
        #expect(rig.coder.decodeCount == 1)
        #expect(await waitUntil { rig.cache.memoryImage(forKey: key) != nil }, "promoted to memory")
        #expect(rig.cache.stores.contains(.store(key: key, hasImage: true, hasData: false, cacheType: .memory)))
        #expect(rig.loader.requestCount == 0)
        let second = try await rig.load(url).get()
        #expect(second.cacheType == .memory)
        #expect(rig.coder.decodeCount == 1)
    }

    @Test func syncQueryOptionsCompleteBeforeLoadImageReturns() throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedDisk(TestCoder.data(width: 3, height: 3), forKey: url.absoluteString)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, options: [.queryDiskDataSync, .queryMemoryDataSync], context: rig.context(),
            completed: recorder.handler)
        let result = try #require(recorder.final, "a sync disk query with its decode completes inline").get()
        #expect(result.cacheType == .disk)
        #expect(result.image.width == 3)
    }

    @Test func queryAndStoreCacheTypesAreHonoured() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        rig.serve(url)
        rig.cache.seedDisk(TestCoder.data(width: 9, height: 9), forKey: key)
        let memoryOnly = try await rig.load(
            url, context: [.queryCacheType: ImageCacheType.memory, .storeCacheType: ImageCacheType.memory]
        ).get()
        #expect(memoryOnly.cacheType == .none, "the disk level was not queried, so the loader answered")
        #expect(rig.cache.calls.first == .query(key: key, cacheType: .memory))
        #expect(rig.cache.stores == [.store(key: key, hasImage: true, hasData: true, cacheType: .memory)])
        let noQuery = try await rig.load(
            url, context: [.queryCacheType: ImageCacheType.none, .storeCacheType: ImageCacheType.none]
        ).get()
        #expect(noQuery.cacheType == .none)
        #expect(rig.loader.requestCount == 2)
        #expect(rig.cache.stores.count == 1, "storeCacheType none stores nothing")
    }

    @Test func derivedKeyMissTransformsTheCachedOriginalWithoutDownloading() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedDisk(TestCoder.data(width: 40, height: 40), forKey: url.absoluteString)
        let transformer = TestTransformer(width: 4, height: 4)
        let result = try await rig.load(url, context: [.imageTransformer: transformer]).get()
        #expect(result.image.width == 4)
        #expect(result.cacheType == .disk)
        #expect(rig.loader.requestCount == 0)
        #expect(transformer.callCount == 1)
        let key = try #require(result.cacheKey)
        #expect(await waitUntil { rig.cache.memoryImage(forKey: key) != nil })
        let thumb = try await rig.load(url, context: [.imageThumbnailPixelSize: PixelSize(width: 10, height: 10)]).get()
        #expect(thumb.image.width == 10)
        #expect(rig.loader.requestCount == 0)
    }

    @Test func originalCacheTypesAreHonoured() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 20, height: 20)
        rig.cache.seedDisk(TestCoder.data(width: 40, height: 40), forKey: url.absoluteString)
        let transformer = TestTransformer(width: 2, height: 2)
        _ = try await rig.load(
            url, context: [.imageTransformer: transformer, .originalQueryCacheType: ImageCacheType.none]
        ).get()
        #expect(rig.loader.requestCount == 1, "the original was not looked up, so the loader was asked")
        #expect(
            await waitUntil {
                rig.cache.stores.contains(
                    .store(key: url.absoluteString, hasImage: false, hasData: true, cacheType: .disk))
            }, "the original bytes go to disk only (the default originalStoreCacheType)")
        let other = testURL()
        rig.serve(other)
        _ = try await rig.load(
            other, context: [.imageTransformer: transformer, .originalStoreCacheType: ImageCacheType.none]
        ).get()
        #expect(
            !rig.cache.stores.contains {
                $0 == .store(key: other.absoluteString, hasImage: false, hasData: true, cacheType: .disk)
            })
    }
}
