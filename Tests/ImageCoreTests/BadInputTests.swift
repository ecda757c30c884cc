import Foundation
import ImageCore
import ImageTestSupport
import Testing

private struct CoderExploded: Error {}

@Suite struct BadInputTests {
    @Test func aCoderThatThrowsFailsTheLoadWithBadImageData() async {
        let cache = RecordingCache()
        let loader = ScriptedLoader()
        let manager = ImageManager(cache: cache, loader: loader)
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 1, height: 1), ResponseMetadata()), for: url)
        var context = ImageContext()
        context.imageCoder = TestCoder(failure: CoderExploded())
        let recorder = DeliveryRecorder()
        manager.loadImage(with: url, context: context, completed: recorder.handler)
        let error = await recorder.waitForFinal()?.error
        #expect(error?.code == .badImageData)
        #expect(error?.stage == .decode)
        #expect(cache.stores.isEmpty)
    }

    @Test func emptyBytesFailWithBadImageData() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.data(Data(), ResponseMetadata()), for: url)
        #expect(await rig.load(url).error?.code == .badImageData)
    }

    @Test func aLoaderThatFailsAfterPartialProgressDeliversItsErrorOnce() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failAfterProgress(ImageError(.downloadFailed, stage: .download), receivedBytes: 100), for: url)
        let progress = Locked<[Int]>([])
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, context: rig.context(),
            progress: { received, _, _ in progress.withLock { $0.append(received) } },
            completed: recorder.handler)
        let error = await recorder.waitForFinal()?.error
        #expect(error?.code == .downloadFailed)
        #expect(progress.value == [100])
        #expect(recorder.all.count == 1)
        #expect(!rig.manager.isFailedURL(url))
    }

    @Test func aHeaderOverThePixelBudgetFailsBeforeAnyPixelIsAllocated() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.data(TestCoder.data(width: 40000, height: 40000), ResponseMetadata()), for: url)
        let result = await rig.load(url, context: [.imageDecodeOptions: ImageDecodeOptions(maxPixelCount: 1_000_000)])
        #expect(result.error?.code == .imageTooLarge)
        #expect(rig.coder.decodeCount == 0, "refused from the probe, the coder never ran")
    }

    @Test func aCacheThatThrowsOnStoreStillDeliversAndLogs() async throws {
        let rig = Rig()
        let logged = Locked<[String]>([])
        rig.manager.logHandler = { message in logged.withLock { $0.append(message) } }
        rig.cache.failStores(true)
        let url = testURL()
        rig.serve(url)
        let result = try await rig.load(url, options: .waitStoreCache).get()
        #expect(result.image.width == 8)
        #expect(logged.value.contains { $0.contains("cache store failed") })
    }

    @Test func aTransformerThatThrowsFailsWithTransformFailed() async {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let result = await rig.load(
            url, context: [.imageTransformer: TestTransformer(width: 1, height: 1, fails: true)])
        #expect(result.error?.code == .transformFailed)
        #expect(result.error?.stage == .transform)
    }
}
