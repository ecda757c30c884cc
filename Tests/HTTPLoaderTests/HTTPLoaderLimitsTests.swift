import Foundation
import HTTPLoader
import ImageCore
import ImageTestSupport
import MetricsTestKit
import Testing

/// Hostile servers against the loader's limits: slots held by slow servers, deadlines, header checks.
/// Limits are small so the tests run fast; every wait is on an event, with a generous bound only for hangs.
@Suite struct HTTPLoaderLimitsTests {
    static let image = pngLikeBytes(count: 2000)

    @Test func drippingServersCannotHoldEverySlot() async throws {
        let body = Self.image
        try await withServer(
            loader: {
                $0.maxConcurrentDownloads = 2
                $0.timeout = 30  // the idle timeout never fires: one byte arrives every 20 ms
                $0.maximumTransferDuration = 60
                // Checked after 1 s, so the normal load has that long even on a busy machine.
                $0.minimumTransferRate = HTTPTransferRate(bytes: 4096, seconds: 0.5, gracePeriod: 1)
            },
            script: { request in
                request.path.hasPrefix("/drip") ? .drip(intervalMilliseconds: 20) : .respond(body: body)
            }
        ) { server, loader in
            let drips = (0..<2).map { startLoad(loader, server.url("/drip/\($0)")).recorder }
            let normal = startLoad(loader, server.url("/normal.png")).recorder
            // Both slots are taken by the dripping servers; the normal load waits in the queue.
            #expect(loader.activeTransferCount.running == 2)
            #expect(loader.activeTransferCount.queued == 1)

            let loaded = try #require(try await normal.result(within: 30)?.get())
            #expect(loaded.data == Data(body))
            for drip in drips {
                let error = try #require(await drip.result(within: 30)?.error)
                #expect(error.code == .timedOut)
                #expect(error.message?.contains("too slow") == true)
                #expect(!loader.shouldBlockFailedURL(server.url("/drip/0"), error: error))
            }
            // The normal request was sent only after a dripping connection had been given up.
            let paths = server.stats.value.requests.map(\.path)
            #expect(paths.last == "/normal.png")
            #expect(await server.waitUntil { $0.abandonedResponses == 2 })
        }
    }

    @Test func theTotalDeadlineEndsATransferThatKeepsTheRate() async throws {
        try await withServer(
            loader: {
                $0.minimumTransferRate = nil
                $0.maximumTransferDuration = 0.3
            },
            script: { _ in .drip(intervalMilliseconds: 5) }
        ) { server, loader in
            let error = try #require(await load(loader, server.url("/long"), within: 30)?.error)
            #expect(error.code == .timedOut)
            #expect(error.message?.contains("longer than") == true)
            #expect(await server.waitUntil { $0.abandonedResponses == 1 })
        }
    }

    @Test func theDeadlineIsOverriddenPerRequest() async throws {
        let body = Self.image
        let parts = stride(from: 0, to: body.count, by: 400).map { Array(body[$0..<min($0 + 400, body.count)]) }
        try await withServer(
            loader: {
                $0.minimumTransferRate = nil
                $0.maximumTransferDuration = 0.2
            },
            // Five parts 100 ms apart: at least 400 ms in all, more than the configured deadline.
            script: { _ in .chunked(headers: [], parts: parts, intervalMilliseconds: 100) }
        ) { server, loader in
            let plain = try #require(await load(loader, server.url("/slow.png"), within: 30)?.error)
            #expect(plain.code == .timedOut)

            var longer = ImageContext()
            longer.httpTransferTimeout = 60
            let loaded = try #require(
                try await load(loader, server.url("/slow.png"), context: longer, within: 30)?.get())
            #expect(loaded.data == Data(body))

            // A request modifier's timeout wins over the context's.
            longer.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request.timeout = 0.1
                return request
            }
            let modified = try #require(await load(loader, server.url("/slow.png"), context: longer, within: 30)?.error)
            #expect(modified.code == .timedOut)
        }
    }

    /// A check like the manager's: the pixel budget from the PNG header (IHDR width and height at bytes 16..<24).
    static func pngBudgetCheck(maxPixels: Int, calls: Locked<[Int]>? = nil) -> DownloadHeaderCheck {
        DownloadHeaderCheck { prefix in
            calls?.withLock { $0.append(prefix.count) }
            guard prefix.count >= 24 else { return .needMoreData }
            let bytes = [UInt8](prefix.prefix(24))
            let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
            let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
            guard width * height <= maxPixels else {
                return .reject(
                    ImageError(.imageTooLarge, stage: .download, message: "\(width)x\(height) over the pixel budget"))
            }
            return .accept
        }
    }

    @Test func aBombHeaderCutsA64MiBTransferAfterTheFirstBytes() async throws {
        let header = [UInt8](PNGFixtures.headerOnly(width: 65535, height: 65535).prefix(33))
        let metrics = TestMetrics()
        try await withServer(
            loader: {
                $0.metricsFactory = metrics
                $0.metricsPrefix = "bomb"
            },
            script: { _ in
                .streamed(
                    headers: [("Content-Type", "image/png")], prefix: header, totalLength: 64 << 20,
                    chunkSize: 64 * 1024)
            }
        ) { server, loader in
            var context = ImageContext()
            let calls = Locked<[Int]>([])
            context.downloadHeaderCheck = Self.pngBudgetCheck(maxPixels: 100_000_000, calls: calls)
            let (_, recorder) = startLoad(loader, server.url("/bomb.png"), context: context)
            let error = try #require(await recorder.result(within: 30)?.error)
            #expect(error.code == .imageTooLarge)
            #expect(ImageLoaderPolicy.isPermanentFailure(error))
            #expect(await server.waitUntil(seconds: 10) { $0.abandonedResponses == 1 })
            // The check stopped being asked once it answered, and the loader read only the first bytes.
            let received = try metrics.expectCounter("bomb_bytes_total").totalValue
            #expect(received < 1 << 20)
            #expect(calls.value.count >= 1 && calls.value.last! >= 24)
            let sent = server.stats.value.bodyBytesWritten
            #expect(sent < 16 << 20, "the server wrote \(sent) bytes before the connection closed")
        }
    }

    @Test func coalescedCallersAreJudgedByTheirOwnChecks() async throws {
        let header = [UInt8](PNGFixtures.headerOnly(width: 4000, height: 4000).prefix(33))
        let total = 300_000
        try await withServer(script: { _ in
            .hold(
                "go",
                then: .streamed(
                    headers: [("Content-Type", "image/png")], prefix: header, totalLength: total, chunkSize: 16 * 1024))
        }) { server, loader in
            var strict = ImageContext()
            strict.downloadHeaderCheck = Self.pngBudgetCheck(maxPixels: 1_000_000)  // 16 MP is too much
            var generous = ImageContext()
            generous.downloadHeaderCheck = Self.pngBudgetCheck(maxPixels: 100_000_000)
            let refused = startLoad(loader, server.url("/shared.png"), context: strict).recorder
            let accepted = startLoad(loader, server.url("/shared.png"), context: generous).recorder
            let unchecked = startLoad(loader, server.url("/shared.png")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            #expect(await refused.result(within: 30)?.error?.code == .imageTooLarge)
            #expect(await accepted.result(within: 30)?.value?.data.count == total)
            #expect(await unchecked.result(within: 30)?.value?.data.count == total)
            #expect(server.requests(to: "/shared.png").count == 1)
            #expect(server.stats.value.abandonedResponses == 0)
        }
    }

    @Test func whenEveryCallerRefusesTheTransferStops() async throws {
        let header = [UInt8](PNGFixtures.headerOnly(width: 65535, height: 65535).prefix(33))
        try await withServer(script: { _ in
            .hold(
                "go",
                then: .streamed(
                    headers: [("Content-Type", "image/png")], prefix: header, totalLength: 64 << 20, chunkSize: 65536))
        }) { server, loader in
            var context = ImageContext()
            context.downloadHeaderCheck = Self.pngBudgetCheck(maxPixels: 1_000_000)
            let recorders = (0..<3).map { _ in startLoad(loader, server.url("/b.png"), context: context).recorder }
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            for recorder in recorders { #expect(await recorder.result(within: 30)?.error?.code == .imageTooLarge) }
            #expect(await server.waitUntil(seconds: 10) { $0.abandonedResponses == 1 })
            #expect(server.stats.value.bodyBytesWritten < 16 << 20)
            #expect(server.requests(to: "/b.png").count == 1)
        }
    }

    @Test func aCheckThatNeverDecidesLetsTheLoadThroughAndALateJoinerIsStillJudged() async throws {
        let body = [UInt8](PNGFixtures.headerOnly(width: 5000, height: 5000))
        try await withServer(script: { _ in
            .splitAtGate("rest", headers: [("Content-Type", "image/png")], body: body, split: 10)
        }) { server, loader in
            var undecided = ImageContext()
            undecided.downloadHeaderCheck = DownloadHeaderCheck { _ in .needMoreData }
            let first = startLoad(loader, server.url("/late.png"), options: .progressiveLoad, context: undecided)
            #expect(await first.recorder.waitForProgress { ($0.last?.receivedBytes ?? 0) >= 10 })
            var strict = ImageContext()
            strict.downloadHeaderCheck = Self.pngBudgetCheck(maxPixels: 1_000_000)
            let late = startLoad(loader, server.url("/late.png"), context: strict)
            server.open("rest")
            #expect(await first.recorder.result(within: 30)?.value?.data == Data(body))
            #expect(await late.recorder.result(within: 30)?.error?.code == .imageTooLarge)
            #expect(server.requests(to: "/late.png").count == 1)
        }
    }
}
