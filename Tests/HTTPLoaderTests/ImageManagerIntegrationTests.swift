import Foundation
import HTTPLoader
import ImageCore
import ImageTestSupport
import MetricsTestKit
import NIOHTTP1
import PNGCoder
import Testing

/// The loader as users register it: the manager's default loader, against a real local server.
@Suite(.serialized) struct ImageManagerIntegrationTests {
    @Test func loadsThroughTheManagerHitsTheCacheThenRevalidatesWith304() async throws {
        let body = [UInt8](TestCoder.data(width: 12, height: 9))
        try await withServer(script: { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return .respond(status: .notModified, headers: [("ETag", "\"v1\"")])
            }
            return .respond(headers: [("Content-Type", "image/x-test"), ("ETag", "\"v1\"")], body: body)
        }) { server, loader in
            let previous = (ImageManager.defaultImageCache, ImageManager.defaultImageLoader)
            defer { (ImageManager.defaultImageCache, ImageManager.defaultImageLoader) = previous }
            ImageManager.defaultImageLoader = LoadersManager(loaders: [DataURLLoader(), loader])
            let cache = RecordingCache()
            ImageManager.defaultImageCache = cache
            let manager = ImageManager()
            var context = ImageContext()
            context.imageCoder = TestCoder()
            let url = server.url("/photo.timg")

            let cold = try await manager.loadImage(with: url, options: .waitStoreCache, context: context)
            #expect(cold.cacheType == .none && cold.image.width == 12)
            #expect(
                cache.diskMetadata(forKey: url.absoluteString)?.etag == "\"v1\"", "validators stored with the entry")

            let warm = try await manager.loadImage(with: url, context: context)
            #expect(warm.cacheType == .memory)
            #expect(server.requests(to: "/photo.timg").count == 1)

            var deliveries: [ImageResult] = []
            for try await event in manager.imageEvents(for: url, options: .refreshCached, context: context) {
                switch event {
                case .preview(let result), .completed(let result): deliveries.append(result)
                case .progress: break
                }
            }
            #expect(deliveries.count == 2)
            #expect(deliveries.first?.isFinal == false && deliveries.first?.cacheType == .memory)
            #expect(deliveries.last?.isNotModified == true, "304: the cached image stays")
            let requests = server.requests(to: "/photo.timg")
            #expect(requests.count == 2)
            #expect(requests.last?.header("If-None-Match") == "\"v1\"")
            #expect(!manager.isFailedURL(url))
        }
    }

    /// `loadData` over HTTP: one request shared with an image load of the URL, the body as served with its
    /// response, validators that get a 304, and a 404 that blocks the URL for image loads too.
    @Test func aDataLoadSharesOneRequestWithAnImageLoadAndRevalidates() async throws {
        let body = [UInt8](TestCoder.data(width: 12, height: 9))
        try await withServer(script: { request in
            if request.path == "/gone.timg" { return .respond(status: .notFound) }
            if request.header("If-None-Match") == "\"v1\"" {
                return .respond(status: .notModified, headers: [("ETag", "\"v1\"")])
            }
            return .hold(
                "body",
                then: .respond(
                    headers: [("Content-Type", "image/x-test"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=60")],
                    body: body))
        }) { server, loader in
            let manager = ImageManager(cache: RecordingCache(), loader: loader)
            var context = ImageContext()
            context.imageCoder = TestCoder()
            let url = server.url("/photo.timg")
            async let image = manager.loadImage(with: url, options: .fromLoaderOnly, context: context)
            async let data = manager.loadData(with: url, context: context)
            #expect(await waitUntil { server.requests(to: "/photo.timg").count == 1 })
            try await Task.sleep(nanoseconds: 50_000_000)
            server.open("body")
            let (loaded, decoded) = try await (data, image)
            #expect(loaded.data == Data(body))
            #expect(loaded.response.statusCode == 200 && loaded.response.etag == "\"v1\"")
            #expect(loaded.response.maxAge == 60)
            #expect(decoded.image.width == 12)
            #expect(server.requests(to: "/photo.timg").count == 1, "one request for the data and the image load")

            var revalidating = ImageContext()
            revalidating.loaderCachedMetadata = CacheEntryMetadata(originalKey: url.absoluteString, etag: "\"v1\"")
            do {
                _ = try await manager.loadData(with: url, options: .refreshCached, context: revalidating)
                Issue.record("a current ETag was answered with bytes")
            } catch {
                #expect((error as any Error as? ImageError)?.code == .cacheNotModified)
            }
            #expect(server.requests(to: "/photo.timg").last?.header("If-None-Match") == "\"v1\"")

            let gone = server.url("/gone.timg")
            await #expect(throws: ImageError.self) { try await manager.loadData(with: gone) }
            #expect(manager.isFailedURL(gone))
            do {
                _ = try await manager.loadImage(with: gone)
                Issue.record("loaded a blocked URL")
            } catch {
                #expect((error as any Error as? ImageError)?.code == .blockedURL)
            }
            #expect(server.requests(to: "/gone.timg").count == 1)
        }
    }

    /// `.refreshStale` over HTTP: a `max-age=0` answer is stale at once, so the next load sends `If-None-Match`;
    /// the 304's own `max-age` renews the entry, so the load after it sends nothing.
    @Test func refreshStaleRevalidatesAStaleEntryAndA304RenewsIt() async throws {
        let body = [UInt8](TestCoder.data(width: 6, height: 5))
        try await withServer(script: { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return .respond(status: .notModified, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=300")])
            }
            return .respond(
                headers: [("Content-Type", "image/x-test"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=0")],
                body: body)
        }) { server, loader in
            let cache = RecordingCache()
            let manager = ImageManager(cache: cache, loader: loader)
            var context = ImageContext()
            context.imageCoder = TestCoder()
            let url = server.url("/fresh.timg")
            let first = try await manager.loadImage(
                with: url, options: [.refreshStale, .waitStoreCache], context: context)
            #expect(first.cacheType == .none && first.image.width == 6)
            let second = try await manager.loadImage(with: url, options: .refreshStale, context: context)
            #expect(second.isNotModified && second.image.width == 6)
            #expect(server.requests(to: "/fresh.timg").count == 2)
            #expect(server.requests(to: "/fresh.timg").last?.header("If-None-Match") == "\"v1\"")
            let key = try #require(second.cacheKey, "a coder in the context makes a key of its own")
            #expect(
                await waitUntil { (cache.diskMetadata(forKey: key)?.expiresAt?.timeIntervalSinceNow ?? 0) > 250 })
            let third = try await manager.loadImage(with: url, options: .refreshStale, context: context)
            #expect(third.image.width == 6 && !third.isNotModified && third.cacheType != .none)
            #expect(server.requests(to: "/fresh.timg").count == 2, "fresh after the 304: no request")
        }
    }

    @Test func a404IsBlockedByTheManagerAnd500IsNot() async throws {
        try await withServer(script: { request in
            .respond(status: request.path == "/missing.png" ? .notFound : .internalServerError)
        }) { server, loader in
            let manager = ImageManager(cache: RecordingCache(), loader: loader)
            let missing = server.url("/missing.png")
            let broken = server.url("/broken.png")
            for url in [missing, broken] {
                do {
                    _ = try await manager.loadImage(with: url)
                    Issue.record("loaded \(url)")
                } catch {
                    #expect((error as any Error as? ImageError)?.code == .invalidDownloadStatusCode)
                }
            }
            #expect(manager.isFailedURL(missing))
            #expect(!manager.isFailedURL(broken))
            do {
                _ = try await manager.loadImage(with: missing)
            } catch {
                #expect((error as any Error as? ImageError)?.code == .blockedURL)
            }
            #expect(server.requests(to: "/missing.png").count == 1)
        }
    }

    @Test func aDecompressionBombIsCutAtItsHeaderOnceAndThenBlocked() async throws {
        // A 65535x65535 PNG header in front of a 64 MiB body: the manager's header check (PNGCoder's probe and
        // the pixel budget) makes the loader close the connection after the first read.
        let header = [UInt8](PNGFixtures.headerOnly(width: 65535, height: 65535).prefix(33))
        let metrics = TestMetrics()
        try await withServer(
            loader: {
                $0.metricsFactory = metrics
                $0.metricsPrefix = "e2e"
            },
            script: { _ in
                .streamed(
                    headers: [("Content-Type", "image/png")], prefix: header, totalLength: 64 << 20,
                    chunkSize: 64 * 1024)
            }
        ) { server, loader in
            let manager = ImageManager(
                cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [PNGCoder.shared]))
            let url = server.url("/bomb.png")
            var errors: [ImageError.Code] = []
            for _ in 0..<3 {
                do throws(ImageError) {
                    _ = try await manager.loadImage(with: url)
                    Issue.record("the bomb loaded")
                } catch {
                    errors.append(error.code)
                }
            }
            #expect(errors == [.imageTooLarge, .blockedURL, .blockedURL])
            #expect(server.requests(to: "/bomb.png").count == 1)
            let received = try metrics.expectCounter("e2e_bytes_total").totalValue
            #expect(received < 1 << 20)
            #expect(await server.waitUntil(seconds: 10) { $0.abandonedResponses == 1 })
            #expect(server.stats.value.bodyBytesWritten < 16 << 20)
        }
    }
}
