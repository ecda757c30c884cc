import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// Smaller contracts of the main line (issue 14 items 7 and 8, issue 13 items 3 and 4 on the core's side).
@Suite struct ManagerContractTests {
    @Test func aRevalidatingLoadReportsTheLevelThatAnswered() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 7, height: 7, etag: "\"v1\"")
        _ = try await rig.load(url, options: .waitStoreCache).get()
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshCached, context: rig.context(), completed: recorder.handler)
        _ = await recorder.waitForFinal()
        let cached = try #require(recorder.all.first?.value)
        #expect(!cached.isFinal && cached.cacheType == .memory, "the image came from memory, the bytes from disk")
    }

    @Test func theDefaultSerializerKeepsAnAnimationAnimated() throws {
        let frames = (0..<3).map { _ in
            ImageFrame(pixels: PixelBuffer(width: 2, height: 2, layout: .rgba8), duration: 0.1)
        }
        // With encode options: the animation's own format when the coders write animations, else animated WebP.
        let coder = AnimationRecordingCoder()
        let lossy = DefaultCacheSerializer(coder: coder, options: ImageEncodeOptions(quality: 0.8))
        _ = lossy.cacheData(for: Image(frames: frames), originalData: nil, imageURL: nil)
        #expect(coder.encodedFormats == [.webp], "an animation without a format becomes animated WebP, not a PNG still")
        _ = lossy.cacheData(for: Image(frames: frames, format: .gif), originalData: nil, imageURL: nil)
        #expect(coder.encodedFormats == [.webp, .gif])
        // Without: only a format the coder promises exact (here PNG, i.e. APNG), whole animations included.
        let exact = AnimationRecordingCoder()
        _ = DefaultCacheSerializer(coder: exact).cacheData(
            for: Image(frames: frames, format: .gif), originalData: nil, imageURL: nil)
        #expect(exact.encodedFormats == [.png] && exact.encodedFrameCounts == [3])
    }

    @Test func theDefaultSerializerWritesNothingWhenNoFormatIsExact() throws {
        let coder = AnimationRecordingCoder(exact: [])
        let image = Image(pixels: PixelBuffer(width: 2, height: 2, layout: .rgba8), format: .jpeg)
        #expect(DefaultCacheSerializer(coder: coder).cacheData(for: image, originalData: nil, imageURL: nil) == nil)
        #expect(coder.encodedFormats.isEmpty, "no lossy encode as a derived entry: it would read back other pixels")
    }

    @Test func progressivePreviewsAreTransformedLikeTheFinalImage() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.progressive(TestCoder.data(width: 40, height: 40), chunks: 6), for: url)
        let recorder = DeliveryRecorder()
        // The final decode waits until a preview was delivered.
        rig.coder.holdDecodes()
        rig.manager.loadImage(
            with: url, options: .progressiveLoad,
            context: rig.context([.imageTransformer: TestTransformer(width: 4, height: 4)]), completed: recorder.handler
        )
        #expect(await waitUntil { !recorder.all.isEmpty })
        rig.coder.releaseDecodes()
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(final.image.width == 4)
        let previews = recorder.all.compactMap(\.value).filter { !$0.isFinal }
        #expect(!previews.isEmpty)
        #expect(previews.allSatisfy { $0.image.width == 4 && $0.image.metadata.isPartial })
    }

    @Test func twoManagersDecodeWithTheirOwnCoders() async throws {
        let url = testURL()
        let loader = ScriptedLoader()
        loader.set(.data(TestCoder.data(width: 3, height: 3), ResponseMetadata(url: url, statusCode: 200)), for: url)
        let withCoder = ImageManager(
            cache: CachesManager(), loader: loader, coders: CodersManager(coders: [TestCoder()]))
        let without = ImageManager(cache: CachesManager(), loader: loader, coders: CodersManager())
        without.logHandler = { _ in }
        #expect(try await withCoder.loadImage(with: url).image.width == 3)
        do {
            _ = try await without.loadImage(with: url)
            Issue.record("a manager without coders decoded")
        } catch {
            #expect(error.code == .noCoder)
        }
    }

    // MARK: Cache-Control

    @Test(arguments: ["no-store", "private, max-age=60"])
    func responsesThatMustNotBeSharedAreNotStored(_ cacheControl: String) async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(
                TestCoder.data(width: 4, height: 4),
                ResponseMetadata(url: url, statusCode: 200, headers: ["cache-control": cacheControl])), for: url)
        _ = try await rig.load(url, options: .waitStoreCache).get()
        #expect(rig.cache.memoryImage(forKey: url.absoluteString) == nil)
        #expect(rig.cache.diskData(forKey: url.absoluteString) == nil)
        #expect(rig.manager.statistics.responsesNotStored == 1)
        _ = try await rig.load(url).get()
        #expect(rig.loader.requestCount == 2)
    }

    @Test func privateResponsesAreStoredWhenTheManagerSaysSo() async throws {
        let rig = Rig()
        rig.manager.cachesPrivateResponses = true
        let url = testURL()
        rig.loader.set(
            .data(
                TestCoder.data(width: 4, height: 4),
                ResponseMetadata(url: url, statusCode: 200, headers: ["cache-control": "private"])), for: url)
        _ = try await rig.load(url, options: .waitStoreCache).get()
        #expect(rig.cache.memoryImage(forKey: url.absoluteString) != nil)
    }

    // MARK: Header check

    @Test func theLoaderGetsAHeaderCheckThatRefusesImagesOverEveryWaitingBudget() async throws {
        let rig = Rig()
        rig.loader.hold()
        let url = testURL()
        rig.serve(url)
        let recorder = DeliveryRecorder()
        var small = ImageDecodeOptions()
        small.maxPixelCount = 100
        rig.manager.loadImage(
            with: url, context: rig.context([.imageDecodeOptions: small]), completed: recorder.handler)
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        let check = try #require(rig.loader.requests.first?.context.downloadHeaderCheck)
        let huge = TestCoder.data(width: 1000, height: 1000)
        #expect(isNeedMore(check(huge.prefix(3))))
        #expect(isAccept(check(TestCoder.data(width: 5, height: 5))))
        if case .reject(let error) = check(huge) {
            #expect(error.code == .imageTooLarge)
        } else {
            Issue.record("a 1000x1000 header was not refused under a 100-pixel budget")
        }
        rig.loader.releaseAll()
        _ = await recorder.waitForFinal()
    }

    @Test func aHeaderOverOneWaitingBudgetIsAcceptedForAnotherWaitingLoad() async throws {
        let rig = Rig()
        rig.loader.hold()
        let url = testURL()
        rig.serve(url)
        var small = ImageDecodeOptions()
        small.maxPixelCount = 100
        rig.manager.loadImage(with: url, context: rig.context([.imageDecodeOptions: small]), completed: { _ in })
        // A second load with a larger budget joins the same download before any verdict: the header is accepted.
        rig.manager.loadImage(with: url, context: rig.context(), completed: { _ in })
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        // A check is a verdict (a refusal closes the download to later loads): ask it once both loads are on it.
        #expect(
            await waitUntil {
                rig.manager.jobs.withLock { registry in
                    registry.jobs.values.reduce(0) { $0 + $1.state.withLock { $0.machine.subscriberCount } }
                } == 2
            })
        let check = try #require(rig.loader.requests.first?.context.downloadHeaderCheck)
        #expect(isAccept(check(TestCoder.data(width: 1000, height: 1000))))
        #expect(rig.loader.requestCount == 1)
        rig.loader.releaseAll()
    }

    @Test(
        "a load that comes after the header check refused an image for the loads then waiting gets a download of its own (found by the model, seed 2098792637429622453)"
    )
    func aHeaderRefusalIsTheVerdictOfTheLoadsItWasMadeFor() async throws {
        let rig = Rig()
        rig.loader.hold()
        let url = testURL()
        rig.serve(url, width: 64, height: 48)
        var small = ImageDecodeOptions()
        small.maxPixelCount = 400
        let refused = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, context: rig.context([.imageDecodeOptions: small]), completed: refused.handler)
        // The loader ran the header check as the request came (ScriptedLoader): refused, the answer held.
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        let plain = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context(), completed: plain.handler)
        #expect(
            await waitUntil(timeout: 5) { rig.loader.requestCount == 2 },
            "the plain load joined a download refused under another load's budget")
        rig.loader.releaseAll()
        #expect(await refused.waitForFinal()?.error?.code == .imageTooLarge)
        let image = try #require(await plain.waitForFinal()?.value?.image)
        #expect(image.width == 64 && image.height == 48)
    }

    @Test func imageTooLargeBlocksTheURL() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(ImageError(.imageTooLarge, stage: .download)), for: url)
        #expect(await rig.load(url).error?.code == .imageTooLarge)
        #expect(await rig.load(url).error?.code == .blockedURL)
        #expect(rig.loader.requestCount == 1)
    }

    private func isNeedMore(_ verdict: DownloadHeaderCheck.Verdict) -> Bool {
        if case .needMoreData = verdict { return true }
        return false
    }

    private func isAccept(_ verdict: DownloadHeaderCheck.Verdict) -> Bool {
        if case .accept = verdict { return true }
        return false
    }
}

/// Records which formats a serializer asked for; encodes to a marker.
private final class AnimationRecordingCoder: ImageCoder, Sendable {
    private let formats = Locked<[(ImageFormat, Int)]>([])
    private let exact: Set<ImageFormat>
    init(exact: Set<ImageFormat> = [.png]) { self.exact = exact }
    var encodedFormats: [ImageFormat] { formats.value.map(\.0) }
    var encodedFrameCounts: [Int] { formats.value.map(\.1) }
    func canDecode(_ data: Data) -> Bool { false }
    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        throw ImageError(.noCoder, stage: .decode)
    }
    func canEncode(to format: ImageFormat) -> Bool { format == .webp || format == .gif || format == .png }
    func encodesExactly(to format: ImageFormat) -> Bool { exact.contains(format) }
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        formats.withLock { $0.append((format, image.frameCount)) }
        return Data([1])
    }
}
