import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// The contracts between the stages (issue 21): what a failure blocks, what may be coalesced, and that every cache
/// miss a load leaves behind ends — each through the public API.
@Suite struct StageContractTests {
    // MARK: What a failure blocks (item 6)

    @Test("a per-request pixel budget never blocks a URL for loads with the default budget")
    func aPerRequestBudgetDoesNotBlockTheURL() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 640, height: 480)
        let strict = await rig.load(url, context: [.imageDecodeOptions: ImageDecodeOptions(maxPixelCount: 100)])
        #expect(strict.error?.code == .imageTooLarge)
        #expect(!rig.manager.isFailedURL(url), "the bytes are fine under the manager's budget")
        let normal = try await rig.load(url).get()
        #expect(normal.image.width == 640)
    }

    @Test("a per-request coder's verdict never blocks a URL")
    func aPerRequestCoderDoesNotBlockTheURL() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let refusing = await rig.load(url, context: [.imageCoder: RefusingCoder()])
        #expect(refusing.error != nil)
        #expect(!rig.manager.isFailedURL(url))
        _ = try await rig.load(url).get()
    }

    @Test("bytes undecodable under the default budget still block the URL")
    func undecodableBytesStillBlock() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.data(Data("garbage".utf8), ResponseMetadata(url: url, statusCode: 200)), for: url)
        #expect(await rig.load(url).error?.code != nil)
        #expect(rig.manager.isFailedURL(url))
    }

    // MARK: What may be coalesced (item 7)

    @Test("loads naming one serializer instance share one download, one transform and one serializer call")
    func oneSerializerInstancePerRequestStillCoalesces() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.hold()
        rig.serve(url, width: 20, height: 20)
        let transformer = CompoundingTransformer(.grow(2))
        let calls = Locked(0)
        let serializer = BlockCacheSerializer { image, _, _ in
            calls.withLock { $0 += 1 }
            return TestCoder.data(width: image.width, height: image.height)
        }
        let recorders = (0..<8).map { _ in DeliveryRecorder() }
        for recorder in recorders {
            var context = ImageContext()
            context.imageTransformer = transformer
            context.cacheSerializer = serializer
            rig.manager.loadImage(with: url, options: .waitStoreCache, context: context, completed: recorder.handler)
        }
        rig.loader.releaseAll()
        for recorder in recorders { #expect(try await recorder.waitForFinal()?.get().image.width == 22) }
        #expect(rig.loader.requestCount == 1)
        #expect(transformer.callCount == 1)
        #expect(calls.value == 1)
    }

    @Test("loads with different serializers share the download and decode, not the product")
    func differentSerializersShareTheDownload() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.hold()
        rig.serve(url, width: 20, height: 20)
        let transformer = CompoundingTransformer(.grow(2))
        let recorders = (0..<3).map { _ in DeliveryRecorder() }
        for recorder in recorders {
            var context = ImageContext()
            context.imageTransformer = transformer
            context.cacheSerializer = BlockCacheSerializer { image, _, _ in
                TestCoder.data(width: image.width, height: image.height)
            }
            rig.manager.loadImage(with: url, context: context, completed: recorder.handler)
        }
        rig.loader.releaseAll()
        for recorder in recorders { #expect(try await recorder.waitForFinal()?.get().image.width == 22) }
        #expect(rig.loader.requestCount == 1)
        #expect(rig.coder.decodeCount == 1)
    }

    @Test("loads whose loader says their transfers differ never share a download")
    func differentTransferKeysDoNotShareADownload() async throws {
        let cache = RecordingCache()
        let loader = ScriptedLoader(
            delay: 0.1,
            transferKey: { context in
                context[ImageContextOption("test.deadline")].map { "\($0)" } ?? ""
            })
        let manager = ImageManager(
            cache: cache, loader: loader, coders: CodersManager(coders: [TestCoder()]))
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 4, height: 4), ResponseMetadata(url: url, statusCode: 200)), for: url)
        // Held until every load is past its cache query and waits on a download, so none is served by another's
        // stored image (without the hold, b could hit the 1 s load's image in memory: two requests, nothing shared).
        loader.hold()
        let (a, b, c) = (DeliveryRecorder(), DeliveryRecorder(), DeliveryRecorder())
        manager.loadImage(
            with: url, context: ImageContext([ImageContextOption("test.deadline"): 1.0]), completed: a.handler)
        manager.loadImage(with: url, context: ImageContext(), completed: b.handler)
        manager.loadImage(with: url, options: .fromLoaderOnly, context: ImageContext(), completed: c.handler)
        #expect(await waitUntil { loader.requestCount >= 2 && cache.diskReads >= 2 })
        loader.releaseAll()
        for (name, recorder) in [("a", a), ("b", b), ("c", c)] {
            let result = try #require(await recorder.waitForFinal()).get()
            #expect(result.cacheType == .none, "\(name) was served by the cache (\(result.cacheType)), not a download")
        }
        #expect(loader.requestCount == 2, "the 1 s load has a transfer of its own; the two default loads share one")
    }

    // MARK: Every miss ends (item 2, the core's half)

    /// Every query that missed ends exactly once, after the fetch, with what the fetch did to the key.
    @Test(
        "a load's cache misses end exactly once, with the fetch's outcome",
        arguments: [
            ("200, stored", CacheMissOutcome.stored), ("404", .notStored), ("500", .abandoned),
            ("no-store", .notStored), ("undecodable", .notStored), ("cancelled", .abandoned),
            ("from cache only", .abandoned),
        ])
    func missesEnd(_ scenario: String, _ expected: CacheMissOutcome) async throws {
        let cache = RecordingCache(answersSynchronously: false)
        let loader = ScriptedLoader()
        if scenario == "cancelled" { loader.hold() }
        let manager = ImageManager(cache: cache, loader: loader, coders: CodersManager(coders: [TestCoder()]))
        manager.logHandler = { _ in }
        let url = testURL(scenario)
        let image = TestCoder.data(width: 4, height: 4)
        switch scenario {
        case "404": loader.set(.failure(.invalidDownloadStatusCode(404)), for: url)
        case "500": loader.set(.failure(.invalidDownloadStatusCode(500)), for: url)
        case "no-store":
            loader.set(
                .data(image, ResponseMetadata(url: url, statusCode: 200, headers: ["cache-control": "no-store"])),
                for: url)
        case "undecodable": loader.set(.data(Data("x".utf8), ResponseMetadata(url: url, statusCode: 200)), for: url)
        default: loader.set(.data(image, ResponseMetadata(url: url, statusCode: 200)), for: url)
        }
        let recorder = DeliveryRecorder()
        let options: ImageOptions = scenario == "from cache only" ? [.fromCacheOnly] : [.waitStoreCache]
        let operation = manager.loadImage(with: url, options: options, completed: recorder.handler)
        if scenario == "cancelled" {
            #expect(await waitUntil { loader.requestCount == 1 })
            operation.cancel()
            loader.releaseAll()
        }
        _ = await recorder.waitForFinal()
        #expect(await waitUntil { !cache.endedMisses.isEmpty })
        try await Task.sleep(nanoseconds: 50_000_000)  // room for a (wrong) second end
        let ended = cache.endedMisses
        #expect(ended.count == 1, "\(ended)")
        #expect(ended.first?.key == url.absoluteString && ended.first?.outcome == expected, "\(ended)")
    }

    @Test("a derived load's misses end per key: the original stored, the product not when the serializer gives none")
    func derivedMissesEndPerKey() async throws {
        let cache = RecordingCache(answersSynchronously: false)
        let loader = ScriptedLoader()
        let manager = ImageManager(cache: cache, loader: loader, coders: CodersManager(coders: [TestCoder()]))
        manager.logHandler = { _ in }
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 8, height: 8), ResponseMetadata(url: url, statusCode: 200)), for: url)
        var context = ImageContext()
        context.imageTransformer = TestTransformer(width: 4, height: 4)
        context.cacheSerializer = BlockCacheSerializer { _, _, _ in nil }
        let key = try #require(manager.cacheKey(for: url, context: context))
        _ = try await manager.loadImage(with: url, options: .waitStoreCache, context: context)
        #expect(await waitUntil { cache.endedMisses.count == 2 })
        let ended = Dictionary(uniqueKeysWithValues: cache.endedMisses.map { ($0.key, $0.outcome) })
        #expect(ended[url.absoluteString] == .stored)
        #expect(ended[key] == .notStored)
    }

    @Test("ten concurrent loads of one URL: ten misses, each ended once, after the store")
    func concurrentMissesEachEndOnce() async throws {
        let cache = RecordingCache(answersSynchronously: false)
        let loader = ScriptedLoader(delay: 0.05)
        let manager = ImageManager(cache: cache, loader: loader, coders: CodersManager(coders: [TestCoder()]))
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 4, height: 4), ResponseMetadata(url: url, statusCode: 200)), for: url)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { _ = try await manager.loadImage(with: url) } }
            try await group.waitForAll()
        }
        #expect(loader.requestCount == 1)
        #expect(await waitUntil { cache.endedMisses.count == 10 })
        #expect(cache.endedMisses.allSatisfy { $0.key == url.absoluteString && $0.outcome == .stored })
    }
}

/// A coder that accepts the test format and refuses to decode it.
private struct RefusingCoder: ImageCoder {
    func canDecode(_ data: Data) -> Bool { TestCoder().canDecode(data) }
    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        throw ImageError(.badImageData, stage: .decode, message: "this coder refuses")
    }
    func canEncode(to format: ImageFormat) -> Bool { false }
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        throw ImageError(.encodeFailed, stage: .encode)
    }
}
