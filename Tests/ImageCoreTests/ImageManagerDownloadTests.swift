import Foundation
import ImageCore
import ImageTestSupport
import Testing

private final class VetoDelegate: ImageManagerDelegate {
    let allow: Bool
    let block: Bool?
    init(allow: Bool = true, block: Bool? = nil) {
        self.allow = allow
        self.block = block
    }
    func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool { allow }
    func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: ImageError) -> Bool? { block }
}

@Suite struct ImageManagerDownloadTests {
    @Test func fromCacheOnlyNeverDownloads() async {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let result = await rig.load(url, options: .fromCacheOnly)
        #expect(result.error?.code == .cacheMiss)
        #expect(rig.loader.requestCount == 0)
    }

    @Test func fromLoaderOnlySkipsTheCacheQuery() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 2, height: 2)
        rig.cache.seedMemory(
            try TestCoder().decode(TestCoder.data(width: 9, height: 9), options: ImageDecodeOptions()),
            forKey: url.absoluteString)
        let result = try await rig.load(url, options: .fromLoaderOnly).get()
        #expect(result.cacheType == .none)
        #expect(result.image.width == 2)
        #expect(!rig.cache.calls.contains { if case .query = $0 { true } else { false } })
    }

    @Test func delegateVetoAndLoaderRefusalPreventTheDownload() async {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let delegate = VetoDelegate(allow: false)
        rig.manager.delegate = delegate
        #expect(await rig.load(url).error?.code == .cacheMiss)
        rig.manager.delegate = nil
        let other = URL(string: "https://example.com/a.png")!
        #expect(await rig.load(other).error?.code == .noLoader, "ScriptedLoader only accepts test:")
        #expect(rig.loader.requestCount == 0)
        withExtendedLifetime(delegate) {}
    }

    @Test func refreshCachedDeliversTheCachedImageThenRevalidatesQuietly() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        rig.cache.seedDisk(
            TestCoder.data(width: 7, height: 7),
            metadata: CacheEntryMetadata(
                originalKey: key, etag: "\"v1\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT"),
            forKey: key)
        rig.loader.set(.failure(ImageError(.cacheNotModified, stage: .download, statusCode: 304)), for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshCached, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(recorder.all.count == 2)
        let first = try #require(recorder.all.first).get()
        #expect(!first.isFinal && first.cacheType == .disk && first.image.width == 7)
        #expect(final.isNotModified && final.image.width == 7, "not modified: the cached image stays, no new image")
        let request = try #require(rig.loader.requests.first)
        #expect(request.context.loaderCachedMetadata?.etag == "\"v1\"")
        #expect(request.context.loaderCachedMetadata?.lastModified == "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(request.context.loaderCachedImage?.width == 7)
        #expect(!rig.manager.isFailedURL(url))
    }

    @Test func refreshCachedReplacesAChangedImage() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        rig.cache.seedMemory(
            try TestCoder().decode(TestCoder.data(width: 7, height: 7), options: ImageDecodeOptions()), forKey: key)
        rig.serve(url, width: 12, height: 12, etag: "\"v2\"")
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshCached, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(recorder.all.count == 2)
        #expect(final.image.width == 12 && !final.isNotModified && final.cacheType == .none)
        #expect(await waitUntil { rig.cache.diskMetadata(forKey: key)?.etag == "\"v2\"" })
        #expect(rig.cache.memoryImage(forKey: key)?.width == 12)
    }

    @Test func downloadIsDecodedWithTheContextCoderTransformedAndStored() async throws {
        let rig = Rig()
        let url = testURL()
        let data = rig.serve(url, width: 30, height: 20)
        let transformer = TestTransformer(width: 3, height: 2)
        let serializer = BlockCacheSerializer { image, original, _ in
            #expect(original == nil, "a derived product never gets the original bytes: they decode to the original")
            return TestCoder.data(width: image.width, height: image.height)
        }
        let result = try await rig.load(
            url, options: .waitStoreCache, context: [.imageTransformer: transformer, .cacheSerializer: serializer]
        ).get()
        #expect(result.image.width == 3)
        #expect(result.image.metadata.isTransformed)
        let key = try #require(result.cacheKey)
        #expect(rig.cache.diskData(forKey: url.absoluteString) == data, "original bytes stored as downloaded")
        #expect(
            rig.cache.diskData(forKey: key) == TestCoder.data(width: 3, height: 2), "variant bytes from the serializer")
        #expect(rig.cache.memoryImage(forKey: key)?.width == 3)
    }

    @Test func animatedImagesAreTransformedOnlyWhenAsked() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(TestCoder.data(width: 10, height: 10, colors: [.white, .black]), ResponseMetadata()), for: url)
        let transformer = TestTransformer(width: 1, height: 1)
        let skipped = try await rig.load(url, options: .fromLoaderOnly, context: [.imageTransformer: transformer]).get()
        #expect(skipped.image.width == 10 && skipped.image.frameCount == 2)
        #expect(transformer.callCount == 0)
        let done = try await rig.load(
            url, options: [.fromLoaderOnly, .transformAnimatedImage], context: [.imageTransformer: transformer]
        ).get()
        #expect(done.image.width == 1 && done.image.frameCount == 2)
        #expect(transformer.callCount == 1)
    }

    @Test func waitStoreCacheCompletesOnlyAfterTheStore() async throws {
        let rig = Rig()
        let url = testURL()
        let data = rig.serve(url)
        let recorder = DeliveryRecorder()
        let storedAtCompletion = Locked<Data?>(nil)
        rig.manager.loadImage(with: url, options: .waitStoreCache, context: rig.context()) { result in
            storedAtCompletion.withLock { $0 = rig.cache.diskData(forKey: url.absoluteString) }
            recorder.handler(result)
        }
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(storedAtCompletion.value == data)
    }
}
