import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import ImageTestSupport
import MetricsTestKit
import Testing

/// What may share a transfer (issue 21): a deadline, a cookie partition; and a transfer that ends once.
@Suite struct HTTPLoaderTransferKeyTests {
    /// A decodable `image/x-test` body; the server sends its first 10 bytes, then the rest when gate "rest" opens.
    static let image = [UInt8](TestCoder.data(width: 8, height: 6))

    static func heldAtGate(_ request: RecordedRequest) -> ServerAction {
        .splitAtGate("rest", headers: [("Content-Type", "image/x-test")], body: image, split: 10)
    }

    static func deadline(_ seconds: Double) -> ImageContext {
        var context = ImageContext()
        context.httpTransferTimeout = seconds
        return context
    }

    // MARK: The deadline, in the loader

    @Test func aShortDeadlineFailsAloneWhileADefaultLoadOfTheSameURLGoesOn() async throws {
        try await withServer(script: Self.heldAtGate) { server, loader in
            let url = server.url("/d.png")
            let plain = startLoad(loader, url).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let short = startLoad(loader, url, context: Self.deadline(1)).recorder
            // Its own transfer: it never joins the default one.
            #expect(await server.waitUntil { $0.requests.count == 2 })
            let error = try #require(await short.result(within: 20)?.error)
            #expect(error.code == .timedOut)
            #expect(error.message?.contains("longer than 1.0 s") == true)
            #expect(plain.completionCount == 0, "the default load is not cut at 1 s")
            server.open("rest")
            #expect(await plain.result()?.value?.data == Data(Self.image))
        }
    }

    @Test func aDefaultLoadJoiningAShortDeadlineOneIsNotCutAtItsDeadline() async throws {
        try await withServer(script: Self.heldAtGate) { server, loader in
            let url = server.url("/j.png")
            let short = startLoad(loader, url, context: Self.deadline(1)).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let plain = startLoad(loader, url).recorder
            #expect(await server.waitUntil { $0.requests.count == 2 })
            #expect(await short.result(within: 20)?.error?.code == .timedOut)
            #expect(plain.completionCount == 0)
            server.open("rest")
            #expect(await plain.result()?.value?.data == Data(Self.image))
            #expect(server.requests(to: "/j.png").count == 2)
        }
    }

    @Test func equalDeadlinesStillShareOneTransferHoweverSpelled() async throws {
        try await withServer(loader: { $0.maximumTransferDuration = 60 }, script: Self.heldAtGate) { server, loader in
            let url = server.url("/s.png")
            let a = startLoad(loader, url, context: Self.deadline(5)).recorder
            let b = startLoad(loader, url, context: Self.deadline(5.0)).recorder
            let c = startLoad(loader, url).recorder
            let d = startLoad(loader, url, context: Self.deadline(60)).recorder  // the configured default
            #expect(await server.waitUntil { $0.requests.count == 2 })
            server.open("rest")
            for recorder in [a, b, c, d] { #expect(await recorder.result()?.value != nil) }
            #expect(server.requests(to: "/s.png").count == 2)
            #expect(loader.transferKey(for: url, options: [], context: Self.deadline(60)) == "")
            #expect(loader.transferKey(for: url, options: [], context: ImageContext()) == "")
            #expect(
                loader.transferKey(for: url, options: [], context: Self.deadline(5))
                    == loader.transferKey(for: url, options: [], context: Self.deadline(5.0)))
            #expect(loader.transferKey(for: url, options: [], context: Self.deadline(1)) != "")
        }
    }

    // MARK: The deadline, through the manager

    /// Collects the final result of manager loads.
    final class Results: Sendable {
        private let state = Locked<[String: Result<ImageResult, ImageError>]>([:])
        func record(_ name: String, _ result: Result<ImageResult, ImageError>) {
            guard (try? result.get())?.isFinal ?? true else { return }
            state.withLock { $0[name] = result }
        }
        subscript(name: String) -> Result<ImageResult, ImageError>? { state.value[name] }
        func wait(for name: String, seconds: Double = 20) async -> Result<ImageResult, ImageError>? {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let result = self[name] { return result }
                try? await Task.sleep(nanoseconds: 5_000_000)
            }
            return self[name]
        }
    }

    static func manager(_ loader: HTTPLoader) -> ImageManager {
        ImageManager(cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [TestCoder()]))
    }

    @Test func managerLoadsWithDifferentDeadlinesNeverShareADownloadInEitherDirection() async throws {
        try await withServer(script: Self.heldAtGate) { server, loader in
            let manager = Self.manager(loader)
            let results = Results()
            // A default load first, then a 1 s one joins: the short one fails alone at its deadline.
            let first = server.url("/m1.png")
            manager.loadImage(with: first, options: .fromLoaderOnly) { results.record("plain1", $0) }
            #expect(await server.waitUntil { $0.requests.count == 1 })
            manager.loadImage(with: first, options: .fromLoaderOnly, context: Self.deadline(1)) {
                results.record("short1", $0)
            }
            // A 1 s load first, then a default one joins: the default one is not cut at 1 s.
            let second = server.url("/m2.png")
            manager.loadImage(with: second, options: .fromLoaderOnly, context: Self.deadline(1)) {
                results.record("short2", $0)
            }
            #expect(await server.waitUntil { $0.requests.count == 3 })
            manager.loadImage(with: second, options: .fromLoaderOnly) { results.record("plain2", $0) }
            #expect(await server.waitUntil { $0.requests.count == 4 })

            #expect(await results.wait(for: "short1")?.error?.code == .timedOut)
            #expect(await results.wait(for: "short2")?.error?.code == .timedOut)
            #expect(results["plain1"] == nil && results["plain2"] == nil)
            server.open("rest")
            #expect(await results.wait(for: "plain1")?.value?.image.width == 8)
            #expect(await results.wait(for: "plain2")?.value?.image.width == 8)
            #expect(!manager.isFailedURL(first) && !manager.isFailedURL(second), "a timeout never blocks a URL")
        }
    }

    // MARK: Cookies per partition

    @Test func cookiesSetInOnePartitionAreNeverSentInAnotherOrUnpartitioned() async throws {
        let body = pngLikeBytes(count: 100)
        try await withServer(script: { request in
            if request.path == "/login" {
                let tenant = request.uri.split(separator: "=").last.map(String.init) ?? "none"
                return .respond(headers: [("Set-Cookie", "session=\(tenant); Path=/")], body: body)
            }
            return .respond(body: body)
        }) { server, loader in
            func context(_ partition: String?) -> ImageContext {
                var context = ImageContext()
                context.cachePartitionKey = partition
                return context
            }
            _ = try #require(
                try await load(loader, server.url("/login?t=A"), options: .handleCookies, context: context("A"))?.get())
            for (path, partition) in [("/a.png", "A"), ("/b.png", "B"), ("/plain.png", nil)] {
                _ = try #require(
                    try await load(loader, server.url(path), options: .handleCookies, context: context(partition))?
                        .get())
            }
            #expect(server.requests(to: "/a.png").first?.header("Cookie") == "session=A")
            #expect(server.requests(to: "/b.png").first?.header("Cookie") == nil)
            #expect(server.requests(to: "/plain.png").first?.header("Cookie") == nil)
            let probe = server.url("/x.png")
            #expect(loader.requestCarriesCredentials(for: probe, options: .handleCookies, context: context("A")))
            #expect(!loader.requestCarriesCredentials(for: probe, options: .handleCookies, context: context("B")))
            #expect(!loader.requestCarriesCredentials(for: probe, options: .handleCookies, context: context(nil)))

            // And the other way round: an unpartitioned cookie stays out of partition A.
            _ = await load(loader, server.url("/login?t=anon"), options: .handleCookies)
            _ = await load(loader, server.url("/c.png"), options: .handleCookies, context: context("A"))
            _ = await load(loader, server.url("/d.png"), options: .handleCookies)
            #expect(server.requests(to: "/c.png").first?.header("Cookie") == "session=A")
            #expect(server.requests(to: "/d.png").first?.header("Cookie") == "session=anon")
        }
    }

    @Test func loadsOfTwoPartitionsNeverShareATransferThatStoresCookies() async throws {
        try await withServer(script: { _ in
            .hold("go", then: .respond(headers: [("Set-Cookie", "k=v")], body: pngLikeBytes(count: 50)))
        }) { server, loader in
            var a = ImageContext()
            a.cachePartitionKey = "A"
            var b = ImageContext()
            b.cachePartitionKey = "B"
            let first = startLoad(loader, server.url("/p.png"), options: .handleCookies, context: a).recorder
            let second = startLoad(loader, server.url("/p.png"), options: .handleCookies, context: b).recorder
            #expect(await server.waitUntil { $0.requests.count == 2 })
            server.open("go")
            #expect(await first.result()?.value != nil)
            #expect(await second.result()?.value != nil)
            #expect(loader.cookieJar.hasCookies(for: server.url("/"), partition: "A"))
            #expect(loader.cookieJar.hasCookies(for: server.url("/"), partition: "B"))
            #expect(!loader.cookieJar.hasCookies(for: server.url("/")))
        }
    }

    // MARK: One ending

    @Test func aDeadlinePassingWhileARetryWaitsEndsTheTransferOnceInEventsAndMetrics() async throws {
        let metrics = TestMetrics()
        try await withServer(
            loader: {
                $0.metricsFactory = metrics
                $0.metricsPrefix = "once"
                $0.maximumTransferDuration = 0.3
                $0.minimumTransferRate = nil
                // The back-off outlasts the deadline: the transfer ends while no task runs, then the timer fires.
                $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 1, maxDelay: 1)
            },
            script: { _ in .respond(status: .serviceUnavailable) }
        ) { server, loader in
            let stream = loader.events()
            let counting = Task {
                var failed = 0
                for await event in stream {
                    if case .failed = event.kind { failed += 1 }
                }
                return failed
            }
            let error = try #require(await load(loader, server.url("/busy.png"), within: 20)?.error)
            #expect(error.code == .timedOut)
            // Past the retry timer (1 s ± 20 %), so a second ending would have been reported by now.
            try await Task.sleep(nanoseconds: 1_600_000_000)
            counting.cancel()
            #expect(await counting.value == 1)
            #expect(try metrics.expectCounter("once_failures_total", [("kind", "timedOut")]).totalValue == 1)
            #expect(try metrics.expectTimer("once_duration").values.count == 1)
            #expect(server.requests(to: "/busy.png").count == 1)
            #expect(loader.activeTransferCount.running == 0)
        }
    }
}
