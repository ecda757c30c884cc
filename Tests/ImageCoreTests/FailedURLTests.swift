import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

private final class BlockingDelegate: ImageManagerDelegate {
    let decision: Bool?
    init(_ decision: Bool?) { self.decision = decision }
    func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: ImageError) -> Bool? { decision }
}

@Suite struct FailedURLTests {
    @Test(arguments: [
        (ImageError.invalidDownloadStatusCode(404), true),
        (ImageError.invalidDownloadStatusCode(410), true),
        (ImageError(.badImageData, stage: .decode), true),
        (ImageError.invalidDownloadStatusCode(500), false),
        (ImageError.invalidDownloadStatusCode(503), false),
        (ImageError(.timedOut, stage: .download), false),
        (ImageError(.downloadFailed, stage: .download, message: "connection refused"), false),
        (ImageError(.downloadFailed, stage: .download, message: "TLS handshake"), false),
        (ImageError.cancelled(stage: .download), false),
    ])
    func onlyErrorsThatSayTheURLIsBadBlockIt(error: ImageError, blocks: Bool) async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(error), for: url)
        let first = await rig.load(url)
        #expect(first.error?.code == error.code)
        #expect(rig.manager.isFailedURL(url) == blocks)
        let second = await rig.load(url)
        #expect((second.error?.code == .blockedURL) == blocks)
        #expect(rig.loader.requestCount == (blocks ? 1 : 2))
    }

    @Test func undecodableDownloadsAreBlocked() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.data(Data(Array("TIMG".utf8) + [0, 1, 0, 1, 5]), ResponseMetadata()), for: url)
        #expect(await rig.load(url).error?.code == .badImageData)
        #expect(rig.manager.isFailedURL(url))
    }

    @Test("a verdict on the bytes blocks image loads, not data loads; one on the transfer blocks both")
    func verdictsBlockTheLoadsTheyJudge() async throws {
        let rig = Rig()
        let undecodable = testURL("undecodable")
        let garbage = Data(Array("TIMG".utf8) + [0, 1, 0, 1, 5])
        rig.loader.set(.data(garbage, ResponseMetadata(url: undecodable, statusCode: 200)), for: undecodable)
        #expect(await rig.load(undecodable).error?.code == .badImageData)
        #expect(rig.manager.isFailedURL(undecodable))
        #expect(!rig.manager.isFailedTransfer(undecodable))
        #expect(await rig.load(undecodable).error?.code == .blockedURL)
        #expect(try await rig.manager.loadData(with: undecodable).data == garbage, "the bytes are what it wants")

        let missing = testURL("missing")
        rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: missing)
        #expect(await rig.load(missing).error?.code == .invalidDownloadStatusCode)
        #expect(rig.manager.isFailedTransfer(missing))
        do {
            _ = try await rig.manager.loadData(with: missing)
            Issue.record("a 404 did not block a data load")
        } catch {
            #expect(error.code == .blockedURL)
        }

        var list = FailedURLList()
        list.insert(undecodable, verdict: .content)
        list.insert(missing)
        #expect(list.contains(undecodable) && list.contains(undecodable, verdict: .content))
        #expect(!list.contains(undecodable, verdict: .transfer))
        #expect(list.contains(missing, verdict: .transfer), "the plain insert is a verdict on the transfer")
        list.insert(undecodable, verdict: .transfer)
        #expect(list.contains(undecodable, verdict: .transfer), "the latest verdict replaces the earlier")
    }

    @Test func retryFailedBypassesTheListAndClearsItOnSuccess() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: url)
        _ = await rig.load(url)
        #expect(rig.manager.isFailedURL(url))
        rig.serve(url)
        _ = try await rig.load(url, options: .retryFailed).get()
        #expect(!rig.manager.isFailedURL(url))
        _ = try await rig.load(url, options: .fromLoaderOnly).get()
    }

    @Test func removeFailedURLAndRemoveAll() async {
        let rig = Rig()
        let a = testURL("a")
        let b = testURL("b")
        rig.loader.setDefault(.failure(.invalidDownloadStatusCode(404)))
        _ = await rig.load(a)
        _ = await rig.load(b)
        #expect(rig.manager.isFailedURL(a) && rig.manager.isFailedURL(b))
        rig.manager.removeFailedURL(a)
        #expect(!rig.manager.isFailedURL(a) && rig.manager.isFailedURL(b))
        rig.manager.removeAllFailedURLs()
        #expect(!rig.manager.isFailedURL(b))
    }

    @Test func delegateOverridesTheDecision() async {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(.invalidDownloadStatusCode(500)), for: url)
        let always = BlockingDelegate(true)
        rig.manager.delegate = always
        _ = await rig.load(url)
        #expect(rig.manager.isFailedURL(url), "delegate blocked a 5xx")
        let other = testURL("other")
        rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: other)
        let never = BlockingDelegate(false)
        rig.manager.delegate = never
        _ = await rig.load(other)
        #expect(!rig.manager.isFailedURL(other), "delegate kept a 404 off the list")
        withExtendedLifetime((always, never)) {}
    }

    @Test func entriesExpireAndTheListIsBounded() {
        var list = FailedURLList(ttl: 60, capacity: 3)
        let start = Date(timeIntervalSince1970: 1_000_000)
        let urls = (0..<5).map { URL(string: "https://x/\($0)")! }
        list.insert(urls[0], now: start)
        #expect(list.contains(urls[0], now: start.addingTimeInterval(59)))
        #expect(!list.contains(urls[0], now: start.addingTimeInterval(60)))
        for (index, url) in urls.enumerated() { list.insert(url, now: start.addingTimeInterval(Double(index))) }
        #expect(list.count == 3)
        #expect(!list.contains(urls[0], now: start.addingTimeInterval(5)))
        #expect(!list.contains(urls[1], now: start.addingTimeInterval(5)))
        #expect(list.contains(urls[4], now: start.addingTimeInterval(5)))
        list.insert(urls[4], now: start.addingTimeInterval(100))
        #expect(list.count == 1, "inserting evicts expired entries")
    }

    @Test func managerTTLUnblocks() async throws {
        let rig = Rig()
        let clock = Locked(Date(timeIntervalSince1970: 1_000_000))
        rig.manager.failedURLClock.withLock { $0 = { clock.value } }
        rig.manager.failedURLTTL = 3
        let url = testURL()
        rig.loader.set(.failure(.invalidDownloadStatusCode(404)), for: url)
        _ = await rig.load(url)
        #expect(rig.manager.isFailedURL(url))
        clock.withLock { $0 += 2.9 }
        #expect(rig.manager.isFailedURL(url))
        clock.withLock { $0 += 0.2 }
        #expect(!rig.manager.isFailedURL(url))
        #expect(await rig.load(url).error?.code == .invalidDownloadStatusCode)
        #expect(rig.loader.requestCount == 2)
    }
}
