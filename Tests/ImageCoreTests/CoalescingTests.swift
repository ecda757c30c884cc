import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct CoalescingTests {
    @Test func concurrentLoadsOfOneURLShareOneRequestAndOneDecode() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let recorders = (0..<20).map { _ in DeliveryRecorder() }
        for recorder in recorders {
            rig.manager.loadImage(
                with: url, options: .fromLoaderOnly, context: rig.context(), completed: recorder.handler)
        }
        rig.loader.releaseAll()
        for recorder in recorders { _ = try #require(await recorder.waitForFinal()).get() }
        #expect(rig.loader.requestCount == 1)
        #expect(rig.coder.decodeCount == 1)
        let images = try recorders.map { try #require($0.final).get().image }
        #expect(images.allSatisfy { $0 === images[0] }, "one decoded image shared by every caller")
    }

    @Test func differentTransformersShareDownloadAndDecode() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 50, height: 50)
        rig.loader.hold()
        let small = TestTransformer(width: 2, height: 2)
        let large = TestTransformer(width: 20, height: 20)
        let a = DeliveryRecorder()
        let b = DeliveryRecorder()
        let c = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, options: .fromLoaderOnly, context: rig.context([.imageTransformer: small]), completed: a.handler)
        rig.manager.loadImage(
            with: url, options: .fromLoaderOnly, context: rig.context([.imageTransformer: large]), completed: b.handler)
        rig.manager.loadImage(
            with: url, options: .fromLoaderOnly, context: rig.context([.imageTransformer: small]), completed: c.handler)
        rig.loader.releaseAll()
        #expect(try #require(await a.waitForFinal()).get().image.width == 2)
        #expect(try #require(await b.waitForFinal()).get().image.width == 20)
        #expect(try #require(await c.waitForFinal()).get().image.width == 2)
        #expect(rig.loader.requestCount == 1)
        #expect(rig.coder.decodeCount == 1)
        #expect(small.callCount == 1, "identical transforms are done once")
        #expect(large.callCount == 1)
    }

    @Test func cancellingOneCallerLeavesTheOthersUntouched() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let cancelled = DeliveryRecorder()
        let kept = DeliveryRecorder()
        let operation = rig.manager.loadImage(
            with: url, options: .fromLoaderOnly, context: rig.context(), completed: cancelled.handler)
        rig.manager.loadImage(with: url, options: .fromLoaderOnly, context: rig.context(), completed: kept.handler)
        operation.cancel()
        #expect(cancelled.final?.error?.code == .cancelled)
        rig.loader.releaseAll()
        _ = try #require(await kept.waitForFinal()).get()
        #expect(rig.loader.cancelledCount == 0)
        #expect(cancelled.all.count == 1, "a cancelled load never delivers an image")
    }

    @Test func cancellingEveryCallerCancelsTheLoaderRequest() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let recorders = (0..<3).map { _ in DeliveryRecorder() }
        let operations = recorders.map {
            rig.manager.loadImage(with: url, options: .fromLoaderOnly, context: rig.context(), completed: $0.handler)
        }
        for operation in operations { operation.cancel() }
        #expect(rig.loader.cancelledCount == 1)
        let answered = Locked(false)
        rig.loader.hook.set { stage in if stage == .downloadDone { answered.withLock { $0 = true } } }
        rig.loader.releaseAll()
        // The released request ran its course (it found itself cancelled); nothing may follow the `cancelled`s.
        #expect(await waitUntil { answered.value && !rig.manager.isRunning })
        for recorder in recorders {
            #expect(recorder.all.count == 1)
            #expect(recorder.final?.error?.code == .cancelled)
        }
        #expect(!rig.manager.isRunning)
    }

    @Test func cancelAllCancelsEveryLoad() async throws {
        let rig = Rig()
        rig.loader.hold()
        let recorders = (0..<5).map { index -> DeliveryRecorder in
            let recorder = DeliveryRecorder()
            let url = testURL("u\(index)")
            rig.serve(url)
            rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
            return recorder
        }
        #expect(await waitUntil { rig.loader.requestCount == 5 })
        #expect(rig.manager.isRunning)
        rig.manager.cancelAll()
        for recorder in recorders { #expect(await recorder.waitForFinal()?.error?.code == .cancelled) }
        #expect(rig.loader.cancelledCount == 5)
        #expect(await waitUntil { !rig.manager.isRunning })
    }

    /// A cancelAll that comes while a load is still starting (its request already at the loader) reaches it: the load
    /// is registered before its work starts. Before, it was registered after, and a cancelAll in that window (the
    /// prefetcher test hit it under load) missed the load, which then waited on the held transfer for ever.
    @Test(arguments: [false, true])
    func cancelAllReachesALoadWhoseRequestIsStarting(dataLoad: Bool) async throws {
        let manager = Locked<ImageManager?>(nil)
        let loader = CancelAllOnRequestLoader { manager.value?.cancelAll() }
        let made = ImageManager(cache: RecordingCache(), loader: loader)
        manager.withLock { $0 = made }
        let ended = Locked<ImageError?>(nil)
        if dataLoad {
            made.loadData(with: testURL()) { result in
                if case .failure(let error) = result { ended.withLock { $0 = error } }
            }
        } else {
            // Memory only: the synchronous miss is definitive, so the request reaches the loader inside loadImage.
            var context = ImageContext()
            context.queryCacheType = .memory
            made.loadImage(with: testURL(), context: context) { result in
                if case .failure(let error) = result { ended.withLock { $0 = error } }
            }
        }
        #expect(await waitUntil { ended.value != nil }, "the load was not cancelled")
        #expect(ended.value?.code == .cancelled)
        #expect(await waitUntil { !made.isRunning })
    }

    @Test func cancellingDuringTheCacheQueryCancelsTheQuery() async throws {
        let cache = RecordingCache(diskDelay: 0.1)
        let loader = ScriptedLoader()
        let coder = TestCoder()
        let manager = ImageManager(cache: cache, loader: loader)
        let url = testURL()
        loader.set(.data(TestCoder.data(width: 2, height: 2), ResponseMetadata()), for: url)
        cache.seedDisk(TestCoder.data(width: 2, height: 2), forKey: url.absoluteString)
        let recorder = DeliveryRecorder()
        var context = ImageContext()
        context.imageCoder = coder
        let readStarted = Locked(false)
        cache.hook.set { stage in if stage == .diskRead { readStarted.withLock { $0 = true } } }
        let operation = manager.loadImage(with: url, context: context, completed: recorder.handler)
        operation.cancel()
        #expect(recorder.final?.error?.code == .cancelled)
        // The delayed disk read ran and found the query cancelled.
        #expect(await waitUntil { readStarted.value })
        #expect(recorder.all.count == 1)
        #expect(cache.diskReads == 0, "the pending disk read was cancelled")
        #expect(loader.requestCount == 0)
        #expect(coder.decodeCount == 0)
    }

    @Test func tenThousandLoadsOverOneHundredURLsMakeOneHundredRequests() async throws {
        let rig = Rig()
        let urls = (0..<100).map { testURL("bulk\($0)") }
        for url in urls { rig.serve(url, width: 4, height: 4) }
        let done = Locked(0)
        let failures = Locked(0)
        for index in 0..<10_000 {
            rig.manager.loadImage(with: urls[index % 100], context: rig.context()) { result in
                guard (try? result.get())?.isFinal != false else { return }
                if case .failure = result { failures.withLock { $0 += 1 } }
                done.withLock { $0 += 1 }
            }
        }
        #expect(await waitUntil(timeout: 30) { done.value == 10_000 })
        #expect(failures.value == 0)
        #expect(rig.loader.requestCount == 100)
        #expect(await waitUntil { !rig.manager.isRunning }, "no operation left running")
    }
}

/// A loader that calls `onRequest` as a request arrives (before `requestImage` returns), then holds the transfer until
/// it is cancelled.
private final class CancelAllOnRequestLoader: ImageLoader {
    let onRequest: @Sendable () -> Void

    init(onRequest: @escaping @Sendable () -> Void) { self.onRequest = onRequest }

    func canRequestImage(for url: URL) -> Bool { true }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let operation = CancellableOperation { completion(.failure(.cancelled(stage: .download))) }
        onRequest()
        return operation
    }
}
