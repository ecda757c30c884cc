import Dispatch
import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// A load asks its cache's synchronous query first; a hit ends the load right there. These tests pin down when that
/// path is taken and that it answers exactly what the asynchronous query would.
@Suite struct MemoryFastPathTests {
    static func image(_ size: Int) throws -> Image {
        try TestCoder().decode(TestCoder.data(width: size, height: size), options: ImageDecodeOptions())
    }

    @Test func aMemoryHitIsAnsweredByTheSynchronousQueryAlone() throws {
        let rig = Rig()
        let url = testURL()
        let image = try Self.image(5)
        rig.cache.seedMemory(image, forKey: url.absoluteString)
        let recorder = DeliveryRecorder()
        let operation = rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        let result = try #require(recorder.final, "completed before loadImage returned").get()
        #expect(result.image === image && result.cacheType == .memory && result.cacheKey == url.absoluteString)
        #expect(result.url == url && result.isFinal && result.data == nil)
        #expect(rig.cache.syncAnswers == 1)
        #expect(rig.cache.calls == [.query(key: url.absoluteString, cacheType: .all)], "no asynchronous query")
        #expect(operation.isFinished && !operation.isCancelled && operation.url == url)
        operation.cancel()
        #expect(!operation.isCancelled && recorder.all.count == 1, "cancelling a finished load changes nothing")
        #expect(!rig.manager.isRunning)
    }

    @Test func aCacheWithoutTheSynchronousQueryStillHitsInline() throws {
        let rig = Rig(cacheAnswersSynchronously: false)
        let url = testURL()
        rig.cache.seedMemory(try Self.image(5), forKey: url.absoluteString)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        let result = try #require(recorder.final).get()
        #expect(result.cacheType == .memory)
        #expect(rig.cache.syncAnswers == 0 && rig.cache.calls.count == 1)
    }

    @Test func optionsThatNeedMoreThanTheImageSkipTheSynchronousQuery() async throws {
        for options in [ImageOptions.refreshCached, .queryMemoryData, .fromLoaderOnly] {
            let rig = Rig()
            let url = testURL()
            rig.serve(url, width: 7, height: 7)
            rig.cache.seedMemory(try Self.image(5), forKey: url.absoluteString)
            _ = await rig.load(url, options: options)
            #expect(rig.cache.syncAnswers == 0, "\(options)")
        }
    }

    @Test func aDefinitiveMissGoesStraightToTheDownload() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 7, height: 7)
        let result = try await rig.load(url, context: [.queryCacheType: ImageCacheType.memory]).get()
        #expect(result.image.width == 7 && result.cacheType == .none)
        // Two synchronous answers — the lookup, and the look the manager takes again before it downloads — and no
        // asynchronous query of the level that already said "not here".
        let queries = rig.cache.calls.filter { if case .query = $0 { true } else { false } }
        #expect(queries.count == 2 && rig.cache.syncAnswers == 2)
        #expect(queries.allSatisfy { $0 == .query(key: url.absoluteString, cacheType: .memory) })
    }

    @Test func aMissThatNeedsTheDiskLevelTakesTheAsynchronousQuery() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedDisk(TestCoder.data(width: 6, height: 6), forKey: url.absoluteString)
        let result = try await rig.load(url).get()
        #expect(result.cacheType == .disk && result.image.width == 6)
        #expect(rig.cache.syncAnswers == 0 && rig.cache.diskReads == 1)
    }

    @Test func aLoadThatCarriesCredentialsNeverAsksTheCache() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 7, height: 7)
        rig.cache.seedMemory(try Self.image(5), forKey: url.absoluteString)
        let modifier = BlockRequestModifier { $0 }
        let result = try await rig.load(url, context: [.downloadRequestModifier: modifier]).get()
        #expect(result.image.width == 7)
        #expect(rig.cache.calls.allSatisfy { if case .query = $0 { false } else { true } })
    }

    @Test func aHitTheLoadCannotUseFallsBackToTheLevelsBelow() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = TestCoder.data(width: 40, height: 40)
        rig.cache.seedMemory(try Self.image(40), forKey: url.absoluteString)
        rig.cache.seedDisk(bytes, forKey: url.absoluteString)
        let result = try await rig.load(
            url, options: .scaleDownLargeImages, context: [.imageScaleDownLimitBytes: 20 * 20 * 4]
        ).get()
        #expect(result.image.width <= 20, "the cached 40x40 image is over the budget")
        #expect(rig.cache.syncAnswers == 1)
    }

    @Test func aHitOnADispatchQueueIsDeliveredThereOnce() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedMemory(try Self.image(5), forKey: url.absoluteString)
        let queue = DispatchQueue(label: "MemoryFastPathTests.callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let onQueue = Locked<[Bool]>([])
        let recorder = DeliveryRecorder()
        let handler = recorder.handler
        rig.manager.loadImage(with: url, context: rig.context([.callbackQueue: CallbackQueue.dispatch(queue)])) {
            result in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) }
            handler(result)
        }
        let result = try #require(await recorder.waitForFinal()).get()
        #expect(result.cacheType == .memory)
        #expect(onQueue.value == [true])
        #expect(rig.cache.syncAnswers == 1)
    }

    @Test func theManagersTransformerAndFilterApplyToTheSynchronousQuery() throws {
        let rig = Rig()
        let transformer = TestTransformer(width: 3, height: 3)
        rig.manager.transformer = transformer
        rig.manager.cacheKeyFilter = .block { url in url.absoluteString + "#filtered" }
        let url = URL(string: "test://host/fast-path.png")!
        let key = try #require(rig.manager.cacheKey(for: url))
        #expect(key == "test://host/fast-path.png#filtered transform(test-resize(3x3)) .png")
        rig.cache.seedMemory(try Self.image(3), forKey: key)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        #expect(try #require(recorder.final).get().cacheKey == key)
        var noTransformer = rig.context()
        noTransformer.setExplicitNone(.imageTransformer)
        let plain = DeliveryRecorder()
        rig.cache.seedMemory(try Self.image(4), forKey: "test://host/fast-path.png#filtered")
        rig.manager.loadImage(with: url, context: noTransformer, completed: plain.handler)
        #expect(try #require(plain.final).get().image.width == 4)
    }

    @Test func aTransformedHitDeliversTheCachedImageUnderTheTransformedKey() async throws {
        let rig = Rig()
        let url = URL(string: "test://host/dir/thumb.JPG?size=2")!
        var context = ImageContext()
        context.imageTransformer = TestTransformer(width: 3, height: 3)
        let key = try #require(rig.manager.cacheKey(for: url, context: context))
        #expect(key == "test://host/dir/thumb.JPG?size=2 transform(test-resize(3x3)) .jpg")
        let image = try Self.image(3)
        rig.cache.seedMemory(image, forKey: key)
        let recorder = DeliveryRecorder()
        let operation = rig.manager.loadImage(with: url, context: context, completed: recorder.handler)
        let result = try #require(recorder.final, "completed before loadImage returned").get()
        #expect(result.image === image && result.cacheKey == key && result.url == url && result.cacheType == .memory)
        #expect(operation.isFinished && operation.url == url && recorder.all.count == 1)
        let viaAsync = try await rig.manager.loadImage(with: url, context: context)
        #expect(viaAsync.image === image && viaAsync.cacheKey == key)
        #expect(rig.cache.calls == [.query(key: key, cacheType: .all), .query(key: key, cacheType: .all)])
        #expect(rig.loader.requestCount == 0)
    }

    @Test func theTransformerPartFollowsTheContextThroughCopiesAndChanges() throws {
        let rig = Rig()
        let url = URL(string: "https://h/a.png")!
        rig.manager.transformer = TestTransformer(width: 2, height: 2)
        #expect(rig.manager.cacheKey(for: url) == "https://h/a.png transform(test-resize(2x2)) .png")
        var first = ImageContext()
        first.imageTransformer = TestTransformer(width: 3, height: 3)
        var second = first
        second.imageTransformer = TestTransformer(width: 4, height: 4)
        var none = second
        none.setExplicitNone(.imageTransformer)
        #expect(rig.manager.cacheKey(for: url, context: first) == "https://h/a.png transform(test-resize(3x3)) .png")
        #expect(rig.manager.cacheKey(for: url, context: second) == "https://h/a.png transform(test-resize(4x4)) .png")
        #expect(rig.manager.cacheKey(for: url, context: none) == "https://h/a.png")
        let image = try Self.image(4)
        rig.cache.seedMemory(image, forKey: "https://h/a.png transform(test-resize(4x4)) .png")
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: second, completed: recorder.handler)
        #expect(try #require(recorder.final).get().image === image)
    }

    @Test func aLoadWithoutAContextOrAURLTakesTheSamePaths() throws {
        let rig = Rig()
        let url = testURL()
        let image = try Self.image(4)
        rig.cache.seedMemory(image, forKey: url.absoluteString)
        let hit = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: nil, completed: hit.handler)
        #expect(try #require(hit.final).get().image === image)
        let invalid = DeliveryRecorder()
        let operation = rig.manager.loadImage(with: nil, context: rig.context(), completed: invalid.handler)
        guard case .failure(let error) = try #require(invalid.final) else {
            Issue.record("a nil URL delivered an image")
            return
        }
        #expect(error.code == .invalidURL && operation.url == nil && operation.isFinished)
    }

    @Test func theTransformerKeyIsReadOnceWhenStored() {
        let transformer = CountingKeyTransformer()
        var context = ImageContext()
        context.imageTransformer = transformer
        let copies = (0..<5).map { _ in context }
        #expect(copies.allSatisfy { $0.imageTransformerKey == "counting" })
        #expect(transformer.keyReads == 1)
        let manager = ImageManager(cache: RecordingCache(), loader: ScriptedLoader())
        manager.transformer = transformer
        for _ in 0..<3 { _ = manager.cacheKey(for: URL(string: "https://h/a.png")!) }
        #expect(transformer.keyReads == 2, "once more, when set on the manager")
    }

    // MARK: The composite's synchronous query

    @Test func cachesManagerAnswersInPriorityOrder() throws {
        let image = try Self.image(2)
        let first = RecordingCache()
        let second = RecordingCache()
        let asyncOnly = RecordingCache(answersSynchronously: false)
        second.seedMemory(image, forKey: "k")
        func answer(
            _ caches: [any ImageCacheProtocol], _ options: ImageOptions = [], policy: CachesManager.Policy = .serial
        )
            -> String
        {
            let manager = CachesManager(caches)
            manager.queryPolicy = policy
            switch manager.queryImageSync(forKey: "k", options: options, context: ImageContext(), cacheType: .memory) {
            case .hit(let hit): return hit.image === image ? "hit" : "other"
            case .miss: return "miss"
            case .needsAsyncQuery: return "async"
            }
        }
        #expect(answer([]) == "miss")
        #expect(answer([first, second]) == "hit", "a miss asks the next cache")
        #expect(answer([first, second], policy: .concurrent) == "hit")
        #expect(answer([first]) == "miss")
        #expect(answer([asyncOnly, second]) == "async", "a cache that can't answer makes the whole answer async")
        #expect(answer([second, asyncOnly]) == "hit", "a hit before it is final")
        #expect(answer([first, second], policy: .highestOnly) == "miss")
        #expect(answer([first, second], policy: .lowestOnly) == "hit")
        #expect(answer([second], .queryMemoryData) == "async", "bytes wanted: the asynchronous query looks further")
    }

    // MARK: Credentials through the loaders registry

    @Test func theLoadersRegistryAnswersForTheLoaderThatHandlesTheURL() {
        let handles = CredentialLoader(scheme: "test", carries: false)
        let other = CredentialLoader(scheme: "other", carries: true)
        let url = URL(string: "test://host/a.png")!
        let options = ImageOptions()
        #expect(
            !LoadersManager(loaders: [handles]).requestCarriesCredentials(
                for: url, options: options, context: ImageContext()))
        #expect(
            !LoadersManager(loaders: [handles, other]).requestCarriesCredentials(
                for: url, options: options, context: ImageContext()),
            "another scheme's loader carrying credentials doesn't make this load private")
        let carrying = CredentialLoader(scheme: "test", carries: true)
        #expect(
            LoadersManager(loaders: [other, carrying]).requestCarriesCredentials(
                for: url, options: options, context: ImageContext()))
        #expect(
            !LoadersManager(loaders: [carrying, handles]).requestCarriesCredentials(
                for: url, options: options, context: ImageContext()),
            "the last added loader that handles the URL decides")
    }
}

/// A loader that handles one scheme and says whether its requests carry credentials.
struct CredentialLoader: ImageLoader {
    let scheme: String
    let carries: Bool

    func canRequestImage(for url: URL) -> Bool { url.scheme == scheme }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        completion(.failure(ImageError(.noLoader, stage: .download)))
        return CancellableOperation()
    }

    func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool { carries }
}

/// A transformer that counts how often its key is read.
final class CountingKeyTransformer: Transformer, Sendable {
    private let reads = Locked(0)
    var keyReads: Int { reads.value }
    var transformerKey: String {
        reads.withLock { $0 += 1 }
        return "counting"
    }
    func transform(_ image: Image, forKey key: String) throws -> Image { image }
}
