import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct ImageManagerRequestTests {
    @Test func nilOrEmptyURLFailsWithInvalidURLOnce() async {
        let rig = Rig()
        for url in [nil, URL(string: "relative/path.png")] as [URL?] {
            let recorder = DeliveryRecorder()
            let operation = rig.manager.loadImage(with: url, completed: recorder.handler)
            #expect(recorder.all.count == 1, "delivered synchronously, exactly once")
            #expect(recorder.final?.error?.code == .invalidURL)
            #expect(operation.isFinished)
        }
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(withString: "ht tp://not a url", completed: recorder.handler)
        #expect(recorder.final?.error?.code == .invalidURL)
        #expect(rig.loader.requestCount == 0)
        #expect(!rig.manager.isRunning)
    }

    @Test func managerStrategiesAreMergedUnlessTheContextNamesItsOwn() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 8, height: 8)
        let managerTransformer = TestTransformer(width: 2, height: 2)
        rig.manager.transformer = managerTransformer
        rig.manager.cacheKeyFilter = .block { "filtered:" + $0.lastPathComponent }

        let merged = try await rig.load(url).get()
        #expect(merged.image.width == 2)
        #expect(merged.cacheKey?.hasPrefix("filtered:") == true)
        #expect(merged.cacheKey?.contains(managerTransformer.transformerKey) == true)

        let own = TestTransformer(width: 3, height: 3)
        let overridden = try await rig.load(url, options: .fromLoaderOnly, context: [.imageTransformer: own]).get()
        #expect(overridden.image.width == 3)

        var noTransformer = rig.context()
        noTransformer.setExplicitNone(.imageTransformer)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .fromLoaderOnly, context: noTransformer, completed: recorder.handler)
        let plain = try #require(await recorder.waitForFinal()).get()
        #expect(plain.image.width == 8, "an explicit none disables the manager's transformer")
        #expect(plain.cacheKey == "filtered:" + url.lastPathComponent)
    }

    @Test func optionsProcessorMayRewriteOptionsAndContext() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.manager.optionsProcessor = .block { _, options, context in
            var context = context
            context.imageTransformer = TestTransformer(width: 1, height: 1)
            return OptionsResult(options: options.union(.fromCacheOnly), context: context)
        }
        let result = await rig.load(url)
        #expect(result.error?.code == .cacheMiss, "the processor added .fromCacheOnly")
        #expect(rig.loader.requestCount == 0)
        rig.manager.optionsProcessor = .block { _, options, context in
            var context = context
            context.imageTransformer = TestTransformer(width: 1, height: 1)
            return OptionsResult(options: options, context: context)
        }
        #expect(try await rig.load(url).get().image.width == 1)
    }

    @Test func cacheKeyAppendsThumbnailThenTransformerAndKeepsTheExtensionLast() {
        let rig = Rig()
        let url = URL(string: "https://example.com/photos/cat.JPG?token=abc")!
        #expect(rig.manager.cacheKey(for: url) == url.absoluteString)
        var context = ImageContext()
        context.imageThumbnailPixelSize = PixelSize(width: 256, height: 128)
        context.imageTransformer = TestTransformer(width: 10, height: 10)
        let key = rig.manager.cacheKey(for: url, context: context)
        #expect(key == url.absoluteString + " thumbnail(256x128,fit) transform(test-resize(10x10)) .jpg")
        #expect(rig.manager.cacheKey(for: url, context: context) == key, "deterministic")
        context.imagePreserveAspectRatio = false
        #expect(rig.manager.cacheKey(for: url, context: context)?.contains("thumbnail(256x128,fill)") == true)
        #expect(rig.manager.cacheKey(for: URL(string: "https://x/noext")!, context: context)?.hasSuffix("))") == true)
        rig.manager.cacheKeyFilter = .block { url in
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            components?.query = nil
            return components?.string
        }
        #expect(rig.manager.cacheKey(for: url) == "https://example.com/photos/cat.JPG")
        rig.manager.cacheKeyFilter = .block { _ in nil }
        #expect(rig.manager.cacheKey(for: url) == nil)
    }

    @Test func callbacksRunOnTheContextQueue() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let queue = DispatchQueue(label: "callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "callbacks")
        let onQueue = Locked<[Bool]>([])
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, context: rig.context([.callbackQueue: CallbackQueue.dispatch(queue)]),
            progress: { _, _, _ in onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "callbacks") } }
        ) { result in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "callbacks") }
            recorder.handler(result)
        }
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(onQueue.value.count >= 2)
        #expect(onQueue.value.allSatisfy { $0 })
    }

    @Test func defaultsAreReadWhenAManagerIsCreatedWithoutArguments() {
        let cache = RecordingCache()
        let loader = ScriptedLoader()
        let previousCache = ImageManager.defaultImageCache
        let previousLoader = ImageManager.defaultImageLoader
        ImageManager.defaultImageCache = cache
        ImageManager.defaultImageLoader = loader
        defer {
            ImageManager.defaultImageCache = previousCache
            ImageManager.defaultImageLoader = previousLoader
        }
        let manager = ImageManager()
        #expect(manager.imageCache as? RecordingCache === cache)
        #expect(manager.imageLoader as? ScriptedLoader === loader)
    }
}
