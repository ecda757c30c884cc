import Foundation
import HTTPTestSupport
import ImageCore
import NIOHTTP1
import Testing

@testable import HTTPLoader

/// One server behaviour per test: status codes, revalidation, content types, broken and hostile bodies.
@Suite struct HTTPLoaderResponseTests {
    static let image = pngLikeBytes(count: 3000)

    @Test func okDeliversBytesAndResponseMetadata() async throws {
        let body = Self.image
        try await withServer(script: { _ in
            .respond(
                headers: [
                    ("Content-Type", "image/png"), ("ETag", "\"v1\""),
                    ("Last-Modified", "Tue, 01 Oct 2024 10:00:00 GMT"),
                    ("Cache-Control", "public, max-age=600"),
                ], body: body)
        }) { server, loader in
            let (_, recorder) = startLoad(loader, server.url("/a.png"))
            let loaded = try #require(try await recorder.result()?.get())
            #expect(loaded.data == Data(body))
            #expect(loaded.response.statusCode == 200)
            #expect(loaded.response.contentType == "image/png")
            #expect(loaded.response.etag == "\"v1\"")
            #expect(loaded.response.lastModified == "Tue, 01 Oct 2024 10:00:00 GMT")
            #expect(loaded.response.maxAge == 600)
            #expect(loaded.response.expectedContentLength == body.count)
            #expect(loaded.response.url == server.url("/a.png"))
            #expect(ImageFormat.detect(loaded.data) == .png)
            #expect(recorder.progress.last?.receivedBytes == body.count)
            #expect(recorder.progress.last?.expectedBytes == body.count)
            #expect(recorder.progress.allSatisfy { $0.partialData == nil })  // not progressive
            #expect(recorder.completionCount == 1)
            // The default headers went out.
            let request = try #require(server.requests(to: "/a.png").first)
            #expect(request.header("Accept") == "image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8")
            #expect(request.header("User-Agent")?.contains("WebImage-HTTPLoader") == true)
            #expect(request.header("User-Agent")?.hasPrefix(ProcessInfo.processInfo.processName) == true)
        }
    }

    @Test func notFoundIsAStatusErrorThatBlocksTheURL() async throws {
        try await withServer(script: { _ in .respond(status: .notFound, body: Array("missing".utf8)) }) {
            server, loader in
            let error = try #require(await load(loader, server.url("/missing.png"))?.error)
            #expect(error.code == .invalidDownloadStatusCode)
            #expect(error.statusCode == 404)
            #expect(error.stage == .download)
            #expect(loader.shouldBlockFailedURL(server.url("/missing.png"), error: error))
        }
    }

    @Test func goneAlsoBlocksButServerErrorDoesNot() async throws {
        try await withServer(script: { request in
            .respond(status: request.path == "/gone" ? .gone : .internalServerError)
        }) { server, loader in
            let gone = try #require(await load(loader, server.url("/gone"))?.error)
            #expect(gone.statusCode == 410)
            #expect(loader.shouldBlockFailedURL(server.url("/gone"), error: gone))
            let failed = try #require(await load(loader, server.url("/boom"))?.error)
            #expect(failed.code == .invalidDownloadStatusCode)
            #expect(failed.statusCode == 500)
            #expect(!loader.shouldBlockFailedURL(server.url("/boom"), error: failed))
            // No retry by default.
            #expect(server.requests(to: "/boom").count == 1)
        }
    }

    @Test func retryWithBackoffRecoversFromServerErrors() async throws {
        let body = Self.image
        try await withServer(
            loader: { $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 0.01) },
            script: { request in
                request.index < 2
                    ? .respond(status: .serviceUnavailable)
                    : .respond(headers: [("Content-Type", "image/png")], body: body)
            }
        ) { server, loader in
            let loaded = try #require(try await load(loader, server.url("/flaky"))?.get())
            #expect(loaded.data == Data(body))
            #expect(server.requests(to: "/flaky").count == 3)
        }
    }

    /// A 429 with `Retry-After: 1` is retried after a second, not after the back-off's 10 ms; one that asks for an
    /// hour fails at once with its answer.
    @Test func retryAfterIsHonoured() async throws {
        let body = Self.image
        try await withServer(
            loader: { $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 5) },
            script: { request in
                if request.path == "/later" {
                    return .respond(status: .tooManyRequests, headers: [("Retry-After", "3600")])
                }
                return request.index == 0
                    ? .respond(status: .tooManyRequests, headers: [("Retry-After", "1")])
                    : .respond(headers: [("Content-Type", "image/png")], body: body)
            }
        ) { server, loader in
            let start = ContinuousClock.now
            let loaded = try #require(try await load(loader, server.url("/limited"))?.get())
            #expect(loaded.data == Data(body))
            #expect(ContinuousClock.now - start >= .milliseconds(950))
            #expect(server.requests(to: "/limited").count == 2)
            let refused = try #require(await load(loader, server.url("/later"))?.error)
            #expect(refused.statusCode == 429 && server.requests(to: "/later").count == 1)
        }
    }

    @Test func revalidationSendsValidatorsAndMapsNotModified() async throws {
        let fresh = pngLikeBytes(count: 500, seed: 9)
        try await withServer(script: { request in
            if request.header("If-None-Match") == "\"v1\"" { return .respond(status: .notModified) }
            return .respond(
                headers: [
                    ("Content-Type", "image/png"), ("ETag", "\"v2\""),
                    ("Last-Modified", "Wed, 02 Oct 2024 10:00:00 GMT"),
                    ("Cache-Control", "max-age=60"),
                ], body: fresh)
        }) { server, loader in
            var context = ImageContext()
            context.loaderCachedMetadata = CacheEntryMetadata(
                etag: "\"v1\"", lastModified: "Tue, 01 Oct 2024 10:00:00 GMT")
            let notModified = try #require(
                await load(loader, server.url("/r.png"), options: .refreshCached, context: context)?.error)
            #expect(notModified.code == .cacheNotModified)
            #expect(notModified.statusCode == 304)
            #expect(!loader.shouldBlockFailedURL(server.url("/r.png"), error: notModified))
            let sent = try #require(server.requests(to: "/r.png").first)
            #expect(sent.header("If-None-Match") == "\"v1\"")
            #expect(sent.header("If-Modified-Since") == "Tue, 01 Oct 2024 10:00:00 GMT")

            // A changed resource: new bytes and new validators.
            context.loaderCachedMetadata = CacheEntryMetadata(etag: "\"v0\"")
            let loaded = try #require(
                try await load(loader, server.url("/r.png"), options: .refreshCached, context: context)?.get())
            #expect(loaded.data == Data(fresh))
            #expect(loaded.response.etag == "\"v2\"")
            #expect(loaded.response.lastModified == "Wed, 02 Oct 2024 10:00:00 GMT")
            #expect(loaded.response.maxAge == 60)

            // Without .refreshCached the validators are not sent.
            _ = await load(loader, server.url("/plain.png"), context: context)
            #expect(server.requests(to: "/plain.png").first?.header("If-None-Match") == nil)
        }
    }

    /// The loader asks for whole images, so a 206 is a part the origin chose to send: only one whose
    /// `Content-Range` is the whole representation is an image; any other fails at the download stage.
    @Test func partialContentIsAnImageOnlyWhenWhole() async throws {
        let body = Self.image
        try await withServer(script: { request in
            let range: String? =
                switch request.path {
                case "/whole.png": "bytes 0-\(body.count - 1)/\(body.count)"
                case "/head.png": "bytes 0-999/\(body.count)"
                case "/tail.png": "bytes 1000-\(body.count - 1)/\(body.count)"
                case "/unknown.png": "bytes 0-\(body.count - 1)/*"
                default: nil
                }
            let sent = request.path == "/head.png" ? Array(body[0..<1000]) : body
            var headers = [("Content-Type", "image/png")]
            if let range { headers.append(("Content-Range", range)) }
            return .respond(status: .partialContent, headers: headers, body: sent)
        }) { server, loader in
            #expect(await load(loader, server.url("/whole.png"))?.value?.data == Data(body))
            for path in ["/head.png", "/tail.png", "/unknown.png", "/none.png"] {
                let error = try #require(await load(loader, server.url(path))?.error, "\(path)")
                #expect(error.code == .invalidDownloadResponse && error.stage == .download, "\(path)")
                #expect(error.statusCode == 206)
            }
        }
    }

    @Test(arguments: [
        ("bytes 0-99/100", true), ("BYTES 0-99/100", true), (" bytes 0-0/1", true), ("bytes 0-98/100", false),
        ("bytes 1-99/100", false), ("bytes 0-99/*", false), ("bytes */100", false), ("items 0-99/100", false),
        ("bytes 0-99/0", false), ("bytes -1-99/100", false), ("bytes 0-99", false), ("", false),
    ])
    func wholeRepresentationRanges(_ value: String, _ whole: Bool) {
        #expect(ResponseValidator.isWholeRepresentation(contentRange: value) == whole)
    }

    @Test func wrongContentTypeFailsWithAnAllowlist() async throws {
        try await withServer(
            loader: { $0.acceptableContentTypes = ["image/*"] },
            script: { request in
                request.path == "/page"
                    ? .respond(headers: [("Content-Type", "text/html; charset=utf-8")], body: Array("<html>".utf8))
                    : .respond(headers: [("Content-Type", "image/png")], body: Self.image)
            }
        ) { server, loader in
            let error = try #require(await load(loader, server.url("/page"))?.error)
            #expect(error.code == .invalidDownloadContentType)
            #expect(!loader.shouldBlockFailedURL(server.url("/page"), error: error))
            #expect(await load(loader, server.url("/ok.png"))?.value != nil)
        }
    }

    @Test func contentLengthLargerThanTheBodyThenCloseFails() async throws {
        try await withServer(script: { _ in .truncated(declaredLength: 10_000, body: pngLikeBytes(count: 1000)) }) {
            server, loader in
            let error = try #require(await load(loader, server.url("/short.png"))?.error)
            #expect(error.code == .downloadFailed)
            #expect(error.underlying != nil)
            #expect(!loader.shouldBlockFailedURL(server.url("/short.png"), error: error))
        }
    }

    @Test func contentLengthOverTheLimitFailsBeforeStreaming() async throws {
        try await withServer(
            loader: { $0.maximumResponseSize = 1000 },
            script: { _ in .respond(headers: [("Content-Type", "image/png")], body: pngLikeBytes(count: 5000)) }
        ) { server, loader in
            let (_, recorder) = startLoad(loader, server.url("/big.png"))
            let error = try #require(await recorder.result()?.error)
            #expect(error.code == .downloadTooLarge)
            #expect(recorder.progress.isEmpty)
        }
    }

    @Test func endlessChunkedBodyFailsTooLargeAndIsTornDown() async throws {
        try await withServer(
            loader: { $0.maximumResponseSize = 256 * 1024 },
            script: { _ in .endless(chunkSize: 16 * 1024) }
        ) { server, loader in
            let (_, recorder) = startLoad(loader, server.url("/endless"))
            let error = try #require(await recorder.result()?.error)
            #expect(error.code == .downloadTooLarge)
            #expect((recorder.progress.last?.receivedBytes ?? 0) <= 256 * 1024)
            // The loader closed the connection mid-body.
            #expect(await server.waitUntil { $0.abandonedResponses == 1 && $0.connectionsClosed == 1 })
        }
    }

    @Test func stallingServerTimesOutAndIsNotBlocked() async throws {
        try await withServer(loader: { $0.timeout = 1 }, script: { _ in .stall }) { server, loader in
            let error = try #require(await load(loader, server.url("/stall"))?.error)
            #expect(error.code == .timedOut)
            #expect(!loader.shouldBlockFailedURL(server.url("/stall"), error: error))
            // The idle (read) timeout ended it, not the transfer deadline or the server.
            #expect("\(error)".contains("readTimeout"))
        }
    }

    @Test func perRequestTimeoutBoundsTheTransfer() async throws {
        try await withServer(script: { _ in .stall }) { server, loader in
            var context = ImageContext()
            context.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request.timeout = 0.5
                return request
            }
            let error = try #require(await load(loader, server.url("/stall"), context: context)?.error)
            #expect(error.code == .timedOut)
        }
    }

    @Test func redirectChainIsFollowed() async throws {
        let body = Self.image
        try await withServer(script: { request in
            switch request.path {
            case "/r1": .respond(status: .found, headers: [("Location", "/r2")])
            case "/r2": .respond(status: .movedPermanently, headers: [("Location", "/r3")])
            case "/r3": .respond(status: .temporaryRedirect, headers: [("Location", "/final.png")])
            default: .respond(headers: [("Content-Type", "image/png")], body: body)
            }
        }) { server, loader in
            let loaded = try #require(try await load(loader, server.url("/r1"))?.get())
            #expect(loaded.data == Data(body))
            #expect(loaded.response.url == server.url("/final.png"))
            #expect(server.stats.value.requests.map(\.path) == ["/r1", "/r2", "/r3", "/final.png"])
        }
    }

    @Test func redirectLoopAndTooManyRedirectsFail() async throws {
        try await withServer(
            loader: { $0.maximumRedirects = 3 },
            script: { request in
                switch request.path {
                case "/loop-a": .respond(status: .found, headers: [("Location", "/loop-b")])
                case "/loop-b": .respond(status: .found, headers: [("Location", "/loop-a")])
                default:
                    // /hop/N → /hop/N+1 forever, never a cycle.
                    .respond(
                        status: .found, headers: [("Location", "/hop/\((Int(request.path.dropFirst(5)) ?? 0) + 1)")])
                }
            }
        ) { server, loader in
            let loop = try #require(await load(loader, server.url("/loop-a"))?.error)
            #expect(loop.code == .invalidDownloadResponse)
            #expect(!loader.shouldBlockFailedURL(server.url("/loop-a"), error: loop))
            let long = try #require(await load(loader, server.url("/hop/1"))?.error)
            #expect(long.code == .invalidDownloadResponse)
            #expect(server.stats.value.requests.filter { $0.path.hasPrefix("/hop") }.count == 4)
        }
    }

    @Test func connectionResetIsADownloadFailure() async throws {
        try await withServer(script: { _ in .reset }) { server, loader in
            let error = try #require(await load(loader, server.url("/reset"))?.error)
            #expect(error.code == .downloadFailed)
            #expect(error.underlying != nil)
            #expect(!loader.shouldBlockFailedURL(server.url("/reset"), error: error))
        }
    }

    @Test func refusedConnectionAndTLSFailuresAreDownloadFailures() async throws {
        try await withServer(
            loader: { $0.retryConnectionEstablishment = false },
            script: { _ in .respond(body: Self.image) }
        ) { server, loader in
            // TLS against a plain-HTTP port: the handshake fails (a TLS failure, not a timeout).
            let tls = try #require(
                await load(
                    loader, URL(string: "https://127.0.0.1:\(server.port)/x.png")!,
                    options: .allowInvalidSSLCertificates)?
                    .error)
            #expect(tls.code == .downloadFailed)
            let strict = try #require(await load(loader, URL(string: "https://127.0.0.1:\(server.port)/x.png")!)?.error)
            #expect(strict.code == .downloadFailed)
        }
        // A port nobody listens on (the server above is gone). AHC retries the connection until the connect
        // timeout, then reports the last connection error, which must not turn into `timedOut`.
        let loader = makeLoader { $0.timeout = 1 }
        let closed = try await TestHTTPServer.start { _ in .stall }
        let port = closed.port
        await closed.stop()
        let refused = try #require(await load(loader, URL(string: "http://127.0.0.1:\(port)/x.png")!)?.error)
        #expect(refused.code == .downloadFailed)
        #expect(!loader.shouldBlockFailedURL(URL(string: "http://127.0.0.1:\(port)/x.png")!, error: refused))
        try await loader.shutdown()
    }

    @Test func nonHTTPURLsAreRefused() async throws {
        let loader = makeLoader()
        #expect(!loader.canRequestImage(for: URL(fileURLWithPath: "/tmp/x.png")))
        #expect(!loader.canRequestImage(for: URL(string: "data:image/png;base64,AAAA")!))
        #expect(loader.canRequestImage(for: URL(string: "HTTPS://example.com/a.png")!))
        let error = try #require(await load(loader, URL(string: "ftp://example.com/a.png")!)?.error)
        #expect(error.code == .invalidURL)
        try await loader.shutdown()
    }
}
