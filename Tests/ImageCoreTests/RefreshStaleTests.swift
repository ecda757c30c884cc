import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// `.refreshStale`: a cached entry is served while the response it came from said it is fresh, and revalidated
/// before the load answers once it is stale; a 304 renews it.
@Suite struct RefreshStaleTests {
    private func seedEntry(_ rig: Rig, _ url: URL, expiresIn seconds: TimeInterval?, maxAge: Int? = 60) {
        let key = url.absoluteString
        rig.cache.seedDisk(
            TestCoder.data(width: 7, height: 7),
            metadata: CacheEntryMetadata(
                originalKey: key, etag: "\"v1\"", maxAge: maxAge,
                expiresAt: seconds.map { Date().addingTimeInterval($0) }),
            forKey: key)
    }

    private static let notModified = ImageError(.cacheNotModified, stage: .download, statusCode: 304)

    @Test func aFreshEntryIsServedWithoutAsking() async throws {
        let rig = Rig()
        let url = testURL()
        seedEntry(rig, url, expiresIn: 3600)
        rig.serve(url, width: 12, height: 12, etag: "\"v2\"")
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshStale, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(final.image.width == 7 && final.cacheType == .disk && !final.isNotModified)
        #expect(recorder.all.count == 1)
        #expect(rig.loader.requestCount == 0)
    }

    @Test func aStaleEntryIsRevalidatedBeforeTheAnswerAndA304RenewsIt() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        seedEntry(rig, url, expiresIn: -1)
        var withLifetime = Self.notModified
        withLifetime.response = ResponseMetadata(url: url, statusCode: 304, etag: "\"v1\"", maxAge: 120)
        rig.loader.set(.failure(withLifetime), for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshStale, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(recorder.all.count == 1, "nothing is delivered before the revalidation answers")
        #expect(final.isFinal && final.isNotModified && final.image.width == 7)
        let request = try #require(rig.loader.requests.first)
        #expect(request.context.loaderCachedMetadata?.etag == "\"v1\"")
        // Renewed from the 304's max-age: fresh for about two minutes.
        #expect(
            await waitUntil {
                (rig.cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) > 100
            })
        #expect(rig.cache.diskMetadata(forKey: key)?.maxAge == 120)
        #expect(rig.cache.diskData(forKey: key) == TestCoder.data(width: 7, height: 7), "the bytes are kept")
        // Fresh now: the next load asks nobody.
        let again = try await rig.load(url, options: .refreshStale)
            .get()
        #expect(again.image.width == 7 && !again.isNotModified)
        #expect(rig.loader.requestCount == 1)
    }

    /// A load whose animation budget keeps only the first frame is answered with a variant of the cached animation;
    /// the 304 renews the entry as the cache held it, never that variant (a key names one result).
    @Test func a304RenewsTheEntryNotTheVariantTheLoadWasAnsweredWith() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        let animation = TestCoder.data(width: 4, height: 4, colors: [.white, .black, .white])
        rig.cache.seedMemory(try TestCoder().decode(animation, options: ImageDecodeOptions()), forKey: key)
        rig.cache.seedDisk(
            animation,
            metadata: CacheEntryMetadata(
                originalKey: key, etag: "\"v1\"", maxAge: 60, expiresAt: Date().addingTimeInterval(-1)),
            forKey: key)
        rig.loader.set(.failure(Self.notModified), for: url)
        var decode = ImageDecodeOptions()
        decode.animationBudget = AnimationBudget(maxFrameCount: 2, onExceeded: .firstFrameOnly)
        let final = try await rig.load(url, options: .refreshStale, context: [.imageDecodeOptions: decode]).get()
        #expect(final.cacheKey == key, "the budget is not in the key: the load reads the animation's entry")
        #expect(final.isNotModified && final.image.frameCount == 1)
        #expect(
            await waitUntil { (rig.cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) > 30 })
        #expect(rig.cache.memoryImage(forKey: key)?.frameCount == 3, "the key still names the whole animation")
    }

    @Test func a304WithoutALifetimeRenewsFromTheStoredOne() async throws {
        let rig = Rig()
        let url = testURL()
        seedEntry(rig, url, expiresIn: -1, maxAge: 30)
        rig.loader.set(.failure(Self.notModified), for: url)
        let asked = Date()
        let final = try await rig.load(url, options: .refreshStale).get()
        let answered = Date()
        #expect(final.isNotModified)
        // Renewed from the stored max-age (30 s) counted from the 304, whenever the write lands: judged against the
        // load's own start and answer, not against the clock when the test looks (a write that landed 10 s late on a
        // loaded machine once failed a window of "20 to 30 s left").
        let key = url.absoluteString
        #expect(await waitUntil { (rig.cache.diskMetadata(forKey: key)?.expiresAt ?? .distantPast) > asked })
        let renewed = try #require(rig.cache.diskMetadata(forKey: key)?.expiresAt)
        #expect(renewed >= asked.addingTimeInterval(30) && renewed <= answered.addingTimeInterval(30), "\(renewed)")
        #expect(rig.cache.diskMetadata(forKey: key)?.maxAge == 30)
    }

    @Test func anEntryWithoutAnExpiryIsStaleAndNewBytesReplaceIt() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        seedEntry(rig, url, expiresIn: nil, maxAge: nil)
        rig.loader.set(
            .data(
                TestCoder.data(width: 12, height: 12),
                ResponseMetadata(url: url, statusCode: 200, contentType: "image/x-test", etag: "\"v2\"", maxAge: 600)),
            for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshStale, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(recorder.all.count == 1)
        #expect(final.image.width == 12 && final.cacheType == .none && !final.isNotModified)
        #expect(await waitUntil { rig.cache.diskMetadata(forKey: key)?.etag == "\"v2\"" })
        #expect((rig.cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) > 500)
    }

    @Test func aFailedRevalidationFailsTheLoad() async throws {
        let rig = Rig()
        let url = testURL()
        seedEntry(rig, url, expiresIn: -1)
        rig.loader.set(.failure(.invalidDownloadStatusCode(503)), for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .refreshStale, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal())
        #expect(final.error?.statusCode == 503)
        #expect(recorder.all.count == 1, "the stale image is never delivered")
    }

    @Test func fromCacheOnlyAnswersWithTheStaleEntryAndRenewsNothing() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        seedEntry(rig, url, expiresIn: -1)
        let final = try await rig.load(url, options: [.refreshStale, .fromCacheOnly]).get()
        #expect(final.image.width == 7)
        #expect(rig.loader.requestCount == 0)
        try await Task.sleep(for: .milliseconds(50))
        #expect((rig.cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) < 0, "not renewed")
        #expect(!rig.cache.stores.contains { if case .store(key, _, true, _) = $0 { true } else { false } })
    }

    @Test func refreshCachedWinsOverRefreshStale() async throws {
        let rig = Rig()
        let url = testURL()
        seedEntry(rig, url, expiresIn: 3600)
        rig.loader.set(.failure(Self.notModified), for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(
            with: url, options: [.refreshCached, .refreshStale], context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(recorder.all.count == 2, "the cached image first, as .refreshCached does")
        #expect(final.isNotModified)
        #expect(rig.loader.requestCount == 1)
    }
}

/// `.refreshStale` on a data load: the manager keeps the bytes under the URL's original key and serves them while
/// fresh, revalidates them once stale, and stores what it is served.
@Suite struct RefreshStaleDataTests {
    private static let bytes = TestCoder.data(width: 7, height: 7)

    private func seed(_ rig: Rig, _ url: URL, expiresIn seconds: TimeInterval) {
        rig.cache.seedDisk(
            Self.bytes,
            metadata: CacheEntryMetadata(
                originalKey: url.absoluteString, contentType: "image/x-test", etag: "\"v1\"", maxAge: 60,
                expiresAt: Date().addingTimeInterval(seconds)),
            forKey: url.absoluteString)
    }

    private func answer(
        _ rig: Rig, _ url: URL, width: Int = 12, maxAge: Int? = 600, headers: [String: String] = [:]
    ) -> Data {
        let data = TestCoder.data(width: width, height: width)
        rig.loader.set(
            .data(
                data,
                ResponseMetadata(
                    url: url, statusCode: 200, contentType: "image/x-test", etag: "\"v2\"", maxAge: maxAge,
                    headers: headers)),
            for: url)
        return data
    }

    @Test func freshBytesAreTheAnswerAndNobodyIsAsked() async throws {
        let rig = Rig()
        let url = testURL()
        seed(rig, url, expiresIn: 3600)
        _ = answer(rig, url)
        let loaded = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(loaded.data == Self.bytes && loaded.cacheType == .disk && !loaded.isNotModified)
        #expect(loaded.response.etag == "\"v1\"" && loaded.response.contentType == "image/x-test")
        #expect(rig.loader.requestCount == 0)
        #expect(rig.coder.decodeCount == 0, "a data load never decodes, cached or not")
    }

    @Test func staleBytesAreRevalidatedAndA304RenewsThem() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        seed(rig, url, expiresIn: -1)
        var notModified = ImageError(.cacheNotModified, stage: .download, statusCode: 304)
        notModified.response = ResponseMetadata(url: url, statusCode: 304, etag: "\"v1\"", maxAge: 120)
        rig.loader.set(.failure(notModified), for: url)
        let loaded = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(loaded.data == Self.bytes && loaded.isNotModified && loaded.cacheType == .disk)
        #expect(rig.loader.requests.first?.context.loaderCachedMetadata?.etag == "\"v1\"")
        #expect(await waitUntil { (rig.cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) > 100 })
        let again = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(again.data == Self.bytes && !again.isNotModified && again.cacheType == .disk)
        #expect(rig.loader.requestCount == 1, "renewed: the next load asks nobody")
    }

    @Test func servedBytesAreKeptAndReadWhileFresh() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        let data = answer(rig, url)
        let loaded = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(loaded.data == data && loaded.cacheType == .none)
        #expect(await waitUntil { rig.cache.diskData(forKey: key) == data })
        #expect(rig.cache.diskMetadata(forKey: key)?.etag == "\"v2\"")
        let again = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(again.data == data && again.cacheType == .disk)
        #expect(rig.loader.requestCount == 1)
        // The image load of the URL finds the same bytes under its key.
        let image = try await rig.load(url).get()
        #expect(image.image.width == 12 && image.cacheType == .disk && rig.loader.requestCount == 1)
    }

    @Test func noStoreBytesAreNotKeptAndPlainDataLoadsNeverTouchTheCache() async throws {
        let rig = Rig()
        let url = testURL()
        _ = answer(rig, url, headers: ["cache-control": "no-store"])
        _ = try await rig.manager.loadData(with: url, options: .refreshStale)
        try await Task.sleep(for: .milliseconds(30))
        #expect(rig.cache.diskData(forKey: url.absoluteString) == nil)
        #expect(rig.cache.stores.isEmpty)
        let other = testURL()
        _ = answer(rig, other)
        _ = try await rig.manager.loadData(with: other)
        #expect(!rig.cache.calls.contains { if case .query(other.absoluteString, _) = $0 { true } else { false } })
        #expect(rig.cache.stores.isEmpty, "without .refreshStale a data load never reads or writes the cache")
    }

    @Test func privateBytesAreKeptOnlyWhenTheManagerCachesPrivateResponses() async throws {
        let rig = Rig()
        let url = testURL()
        let data = answer(rig, url, headers: ["cache-control": "private, max-age=600"])
        _ = try await rig.manager.loadData(with: url, options: .refreshStale)
        try await Task.sleep(for: .milliseconds(30))
        #expect(rig.cache.stores.isEmpty, "private: not kept by a shared cache")
        rig.manager.cachesPrivateResponses = true
        _ = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(await waitUntil { rig.cache.diskData(forKey: url.absoluteString) == data })
    }

    @Test func fromCacheOnlyAnswersWithStaleBytesAndAMissFails() async throws {
        let rig = Rig()
        let url = testURL()
        seed(rig, url, expiresIn: -1)
        let loaded = try await rig.manager.loadData(with: url, options: [.refreshStale, .fromCacheOnly])
        #expect(loaded.data == Self.bytes && !loaded.isNotModified && loaded.cacheType == .disk)
        #expect(rig.loader.requestCount == 0)
        await #expect(throws: ImageError.self) {
            try await rig.manager.loadData(with: testURL(), options: [.refreshStale, .fromCacheOnly])
        }
    }
}
