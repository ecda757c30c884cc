import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// `ImageManager.loadData`: the loader's bytes, shared with image loads of the same URL, untouched by what they do.
@Suite struct DataLoadTests {
    @Test("a data load shares one transfer with image loads of its URL, and only the image loads decode")
    func aDataLoadSharesTheTransferWithImageLoads() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = rig.serve(url, etag: "\"v1\"")
        rig.loader.hold()
        let images = (0..<2).map { _ in DeliveryRecorder() }
        for recorder in images {
            rig.manager.loadImage(
                with: url, options: .fromLoaderOnly, context: rig.context(), completed: recorder.handler)
        }
        let data = Task { try await rig.manager.loadData(with: url) }
        #expect(await waitUntil { rig.loader.requestCount == 1 && rig.manager.isRunning })
        try await Task.sleep(nanoseconds: 20_000_000)
        rig.loader.releaseAll()
        let loaded = try await data.value
        #expect(loaded.data == bytes)
        #expect(loaded.response.etag == "\"v1\"")
        #expect(loaded.url == url)
        for recorder in images { _ = try #require(await recorder.waitForFinal()).get() }
        #expect(rig.loader.requestCount == 1, "one transfer for the data load and both image loads")
        #expect(rig.coder.decodeCount == 1, "the image loads' decode, none for the data load")
    }

    @Test("a data load alone never decodes, never reads or writes the cache")
    func aDataLoadAloneNeverDecodesNorCaches() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = rig.serve(url)
        let loaded = try await rig.manager.loadData(with: url)
        #expect(loaded.data == bytes)
        #expect(rig.coder.decodeCount == 0)
        #expect(rig.cache.calls.isEmpty, "calls: \(rig.cache.calls)")
        // A second one asks the loader again: the bytes of now.
        _ = try await rig.manager.loadData(with: url)
        #expect(rig.loader.requestCount == 2)
        #expect(!rig.manager.isRunning)
    }

    @Test("a loader that delivers no bytes fails a data load with a typed error, not an empty success")
    func noBytesIsATypedFailure() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.data(Data(), ResponseMetadata(url: url, statusCode: 200)), for: url)
        do {
            let loaded = try await rig.manager.loadData(with: url)
            Issue.record("an empty success: \(loaded.data.count) bytes")
        } catch {
            #expect(error.code == .invalidDownloadResponse && error.stage == .download)
        }
        #expect(!rig.manager.isFailedURL(url), "not a verdict on the URL: the loader may deliver next time")
        #expect(!rig.manager.isRunning)
    }

    @Test("an image load's pixel budget and failed decode never reach the data load sharing its transfer")
    func whatAnImageLoadDoesNeverReachesTheDataLoad() async throws {
        let rig = Rig()
        let url = testURL()
        let huge = TestCoder.data(width: 40000, height: 40000)
        rig.loader.set(.data(huge, ResponseMetadata(url: url, statusCode: 200)), for: url)
        rig.loader.hold()
        // The data load starts the transfer; its header check then accepts whatever image the bytes hold.
        let data = Task { try await rig.manager.loadData(with: url) }
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        let image = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, options: .fromLoaderOnly,
            context: rig.context([.imageDecodeOptions: ImageDecodeOptions(maxPixelCount: 1_000_000)]),
            completed: image.handler)
        rig.loader.releaseAll()
        #expect(try await data.value.data == huge)
        #expect(await image.waitForFinal()?.error?.code == .imageTooLarge)
        #expect(rig.loader.requestCount == 1)
        #expect(rig.coder.decodeCount == 0, "refused from the probe: no pixel was allocated")
    }

    @Test("failures: a permanent one blocks the URL for data and image loads alike; retryFailed asks again")
    func failuresAreTypedAndBlockTheURL() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: url)
        await #expect(throws: ImageError.self) { try await rig.manager.loadData(with: url) }
        #expect(rig.manager.isFailedURL(url))
        do {
            _ = try await rig.manager.loadData(with: url)
            Issue.record("a blocked URL was loaded")
        } catch {
            #expect(error.code == .blockedURL)
        }
        #expect(await rig.load(url).error?.code == .blockedURL)
        let bytes = rig.serve(url)
        #expect(try await rig.manager.loadData(with: url, options: .retryFailed).data == bytes)
        #expect(!rig.manager.isFailedURL(url))
        do {
            _ = try await rig.manager.loadData(with: nil)
            Issue.record("a nil URL was loaded")
        } catch {
            #expect(error.code == .invalidURL)
        }
        do {
            _ = try await rig.manager.loadData(with: url, options: .fromCacheOnly)
            Issue.record("a data load asked the loader under fromCacheOnly")
        } catch {
            #expect(error.code == .cacheMiss)
        }
    }

    @Test("cancelling the calling task ends its share only; the last one out cancels the transfer")
    func cancellingEndsItsShareOnly() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = rig.serve(url)
        rig.loader.hold()
        let image = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .fromLoaderOnly, context: rig.context(), completed: image.handler)
        let data = Task { try await rig.manager.loadData(with: url) }
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        try await Task.sleep(nanoseconds: 20_000_000)
        data.cancel()
        do {
            _ = try await data.value
            Issue.record("a cancelled data load delivered bytes")
        } catch let error as ImageError {
            #expect(error.code == .cancelled)
        }
        rig.loader.releaseAll()
        #expect(try #require(await image.waitForFinal()).get().image.width == 8)
        #expect(rig.loader.cancelledCount == 0)

        let other = testURL("alone")
        rig.serve(other)
        rig.loader.hold()
        let alone = Task { try await rig.manager.loadData(with: other) }
        #expect(await waitUntil { rig.loader.requestCount(for: other) == 1 })
        alone.cancel()
        await #expect(throws: ImageError.self) { try await alone.value }
        #expect(await waitUntil { rig.loader.cancelledCount == 1 }, "the last caller out cancels the transfer")
        #expect(await waitUntil { !rig.manager.isRunning })
        rig.loader.releaseAll()
        #expect(try await rig.manager.loadData(with: url).data == bytes)
    }

    @Test("validators make a transfer of their own, carried to the loader; the deadline bounds the load")
    func validatorsAndDeadline() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let image = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .fromLoaderOnly, context: rig.context(), completed: image.handler)
        var context = ImageContext()
        context.loaderCachedMetadata = CacheEntryMetadata(originalKey: url.absoluteString, etag: "\"v0\"")
        let revalidating = Task { [context] in
            try await rig.manager.loadData(with: url, options: .refreshCached, context: context)
        }
        #expect(await waitUntil { rig.loader.requestCount == 2 }, "a 304 must never be shared with a plain load")
        #expect(rig.loader.requests.last?.context.loaderCachedMetadata?.etag == "\"v0\"")
        rig.loader.releaseAll()
        _ = try await revalidating.value
        _ = try #require(await image.waitForFinal()).get()

        let slow = testURL("slow")
        rig.serve(slow)
        rig.loader.hold()
        let started = Date()
        do {
            _ = try await rig.manager.loadData(with: slow, context: ImageContext([.loadTimeout: 0.1]))
            Issue.record("a held transfer answered")
        } catch {
            #expect(error.code == .timedOut)
        }
        #expect(Date().timeIntervalSince(started) < 2)
        rig.loader.releaseAll()
    }

    @Test("the callback form completes exactly once, on the context's callback queue")
    func theCallbackFormCompletesOnce() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = rig.serve(url)
        let calls = Locked<[Result<ImageDataResult, ImageError>]>([])
        rig.manager.loadData(with: url) { result in calls.withLock { $0.append(result) } }
        #expect(await waitUntil { !calls.value.isEmpty })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(calls.value.count == 1)
        #expect(try calls.value.first?.get().data == bytes)
    }
}
