import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// What a `.refreshStale` data load keeps besides the bytes: the loader's own blob (``ResponseMetadata/extendedData``),
/// stored with them and handed back with every answer from the cache, and the miss it claimed (a fleet's lease),
/// which ends once, after the store, with the outcome the load saw.
@Suite struct KeptDataLedgerTests {
    private static let blob = Data("hops:a>b".utf8)

    private func answer(
        _ rig: Rig, _ url: URL, blob: Data?, maxAge: Int? = 600, headers: [String: String] = [:]
    ) -> Data {
        let data = TestCoder.data(width: 9, height: 9)
        var response = ResponseMetadata(
            url: url, statusCode: 200, contentType: "image/x-test", etag: "\"v1\"", maxAge: maxAge, headers: headers)
        response.extendedData = blob
        rig.loader.set(.data(data, response), for: url)
        return data
    }

    @Test func theLoadersBlobIsKeptAndComesBackWithTheBytes() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        _ = answer(rig, url, blob: Self.blob)
        let loaded = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(loaded.response.extendedData == Self.blob && loaded.cacheType == .none)
        #expect(await waitUntil { rig.cache.diskMetadata(forKey: key)?.extendedData == Self.blob })
        let cached = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(cached.cacheType == .disk && cached.response.extendedData == Self.blob)
        #expect(rig.loader.requestCount == 1)
    }

    /// A stale entry of `bytes` under `key`, kept with ``blob``.
    private func seedStale(_ rig: Rig, _ key: String, _ bytes: Data) {
        rig.cache.seedDisk(
            bytes,
            metadata: CacheEntryMetadata(
                originalKey: key, etag: "\"v1\"", maxAge: 60, expiresAt: Date().addingTimeInterval(-1),
                extendedData: Self.blob),
            forKey: key)
    }

    @Test func aRevalidationShowsTheLoaderItsBlobAndA304MayReplaceIt() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        let bytes = TestCoder.data(width: 7, height: 7)
        seedStale(rig, key, bytes)
        let updated = Data("hops:a>c".utf8)
        var notModified = ImageError(.cacheNotModified, stage: .download, statusCode: 304)
        var response = ResponseMetadata(url: url, statusCode: 304, maxAge: 120)
        response.extendedData = updated
        notModified.response = response
        rig.loader.set(.failure(notModified), for: url)
        let loaded = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(rig.loader.requests.first?.context.loaderCachedMetadata?.extendedData == Self.blob)
        #expect(loaded.isNotModified && loaded.data == bytes)
        #expect(loaded.response.extendedData == updated, "the answer carries the renewed blob")
        #expect(loaded.response.maxAge == 120)
        #expect(await waitUntil { rig.cache.diskMetadata(forKey: key)?.extendedData == updated })
        // A 304 that brings no blob keeps the stored one.
        seedStale(rig, key, bytes)
        rig.loader.set(.failure(ImageError(.cacheNotModified, stage: .download, statusCode: 304)), for: url)
        let again = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(again.isNotModified && again.response.extendedData == Self.blob)
    }

    /// The miss ends after the store finished (a waiting replica then finds the entry), as `stored`.
    @Test func aMissIsClaimedAndEndsAfterItsStore() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        _ = answer(rig, url, blob: nil)
        _ = try await rig.manager.loadData(with: url, options: .refreshStale)
        #expect(await waitUntil { rig.cache.endedMisses.contains { $0.key == key } })
        let calls = rig.cache.calls
        let stored = try #require(calls.firstIndex { if case .store(key, _, _, _) = $0 { true } else { false } })
        let ended = try #require(calls.firstIndex { if case .missEnded(key, _) = $0 { true } else { false } })
        #expect(stored < ended)
        #expect(rig.cache.endedMisses.map(\.outcome) == [.stored], "one end per claim")
    }

    /// Each way a load ends without a store ends its claim once: `notStored` when every try would end the same
    /// (no-store, a 404), `abandoned` when another may succeed (a 503, a cancel, a store that failed).
    @Test(arguments: ["no-store", "404", "503", "cancel", "failed store"])
    func aMissThatStoresNothingEndsItsClaimByWhatItSaw(_ ending: String) async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        let expected: CacheMissOutcome
        switch ending {
        case "no-store":
            _ = answer(rig, url, blob: nil, headers: ["cache-control": "no-store"])
            expected = .notStored
        case "404":
            rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: url)
            expected = .notStored
        case "503":
            rig.loader.set(.failure(.invalidDownloadStatusCode(503)), for: url)
            expected = .abandoned
        case "failed store":
            _ = answer(rig, url, blob: nil)
            rig.cache.failStores(true)
            expected = .abandoned
        default:
            _ = answer(rig, url, blob: nil)
            rig.loader.hold()
            expected = .abandoned
        }
        let load = Task { try await rig.manager.loadData(with: url, options: .refreshStale) }
        if ending == "cancel" {
            #expect(await waitUntil { rig.loader.requestCount == 1 })
            load.cancel()
        }
        _ = try? await load.value
        rig.loader.releaseAll()
        #expect(await waitUntil { !rig.cache.endedMisses.isEmpty })
        try await Task.sleep(for: .milliseconds(20))
        #expect(rig.cache.endedMisses.map(\.key) == [key])
        #expect(rig.cache.endedMisses.map(\.outcome) == [expected])
        #expect(rig.cache.stores.isEmpty == (ending != "failed store"))
    }

    /// A hit claims nothing: the cache ended it itself.
    @Test func aHitEndsNoClaim() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedDisk(
            TestCoder.data(width: 7, height: 7),
            metadata: CacheEntryMetadata(
                originalKey: url.absoluteString, maxAge: 60, expiresAt: Date().addingTimeInterval(60)),
            forKey: url.absoluteString)
        _ = try await rig.manager.loadData(with: url, options: .refreshStale)
        try await Task.sleep(for: .milliseconds(20))
        #expect(rig.cache.endedMisses.isEmpty)
    }

    /// The loads waiting on the manager's running jobs.
    private static func waiting(on manager: ImageManager) -> Int {
        let jobs = manager.jobs.withLock { Array($0.jobs.values) }
        return jobs.map { job in job.state.withLock { $0.machine.subscriberCount } }.reduce(0, +)
    }

    /// Loads that share one transfer store its bytes once, and each ends its claim after that store; loads whose one
    /// 304 renewed an entry renew it once.
    @Test func loadsSharingATransferStoreItOnce() async throws {
        let rig = Rig()
        let url = testURL()
        let key = url.absoluteString
        let data = answer(rig, url, blob: Self.blob)
        rig.loader.hold()
        let loads = (0..<4).map { _ in Task { try await rig.manager.loadData(with: url, options: .refreshStale) } }
        // Every load waits on the transfer before it is let go (a load whose query answered but which has not joined
        // yet would find the job ended and start its own).
        #expect(await waitUntil { rig.loader.requestCount == 1 && Self.waiting(on: rig.manager) == 4 })
        // Four queries, and the first load's second look at memory before it started the transfer.
        #expect(rig.cache.queries(of: key) == 5)
        rig.loader.releaseAll()
        var served: [ImageDataResult] = []
        for load in loads { served.append(try await load.value) }
        #expect(served.allSatisfy { $0.data == data })
        #expect(served.filter(\.joinedTransfer).count == 3, "the three that joined the first load's transfer say so")
        #expect(rig.loader.requestCount == 1, "one transfer")
        #expect(await waitUntil { rig.cache.endedMisses.count == 4 })
        #expect(rig.cache.stores.count == 1, "stored once, not once per load")
        #expect(rig.cache.endedMisses.allSatisfy { $0.key == key && $0.outcome == .stored })

        seedStale(rig, key, data)
        rig.loader.set(.failure(ImageError(.cacheNotModified, stage: .download, statusCode: 304)), for: url)
        rig.loader.hold()
        let revalidations = (0..<3).map { _ in
            Task { try await rig.manager.loadData(with: url, options: .refreshStale) }
        }
        #expect(await waitUntil { rig.loader.requestCount == 2 && Self.waiting(on: rig.manager) == 3 })
        #expect(rig.cache.queries(of: key) == 9)
        rig.loader.releaseAll()
        var renewed: [ImageDataResult] = []
        for load in revalidations { renewed.append(try await load.value) }
        #expect(renewed.allSatisfy { $0.isNotModified })
        #expect(renewed.filter(\.joinedTransfer).count == 2, "two joined the first load's revalidation")
        #expect(rig.loader.requestCount == 2, "one revalidation")
        #expect(await waitUntil { rig.cache.stores.count == 2 })
        try await Task.sleep(for: .milliseconds(30))
        #expect(rig.cache.stores.count == 2, "renewed once, not once per load")
    }
}
