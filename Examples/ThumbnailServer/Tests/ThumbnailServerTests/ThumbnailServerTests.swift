import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import ThumbnailQuery
import WebImage

@testable import ThumbnailServerApp

/// Real HTTP against a running server on 127.0.0.1 whose `/samples/` route is the origin of the thumbnails.
@Suite struct ThumbnailServerTests {
    /// Runs `body` against a live server with its own disk cache folder, then removes the folder.
    func withServer(
        _ adjust: (inout ThumbnailServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (any TestClientProtocol, ServerCounters) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = ThumbnailServerConfiguration()
        configuration.port = 0
        configuration.cacheDirectory = directory
        adjust(&configuration)
        let counters = ServerCounters()
        let app = try await buildApplication(configuration, counters: counters)
        try await app.test(.live) { client in try await body(client, counters) }
    }

    func thumbnailURI(_ client: any TestClientProtocol, _ sample: String, query: String = "w=64&h=64") throws -> String
    {
        let port = try #require(client.port)
        let source = "http://127.0.0.1:\(port)/samples/\(sample)"
        return "/thumbnail?url=\(source.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&\(query)"
    }

    func pixel(_ buffer: PixelBuffer, _ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) {
        let channels = buffer.layout.bytesPerPixel
        let i = y * buffer.bytesPerRow + x * channels
        return (buffer.bytes[i], buffer.bytes[i + 1], buffer.bytes[i + 2])
    }

    func decode(_ body: ByteBuffer) throws -> Image {
        try CodersManager.shared.decode(Data(buffer: body), options: ImageDecodeOptions())
    }

    @Test func webpWhenAccepted() async throws {
        try await withServer { client, _ in
            let uri = try thumbnailURI(client, "photo.jpg")
            let response = try await client.execute(
                uri: uri, method: .get, headers: [.accept: "image/webp,image/*;q=0.8"])
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "image/webp")
            let image = try decode(response.body)
            #expect(image.format == .webp)
            #expect(image.width == 64 && image.height == 43)  // 960x640 fitted into 64x64
        }
    }

    @Test func jpegOrPNGWithoutWebP() async throws {
        try await withServer { client, _ in
            let photo = try await client.execute(
                uri: try thumbnailURI(client, "photo.jpg", query: "w=100&h=100&fit=cover"), method: .get,
                headers: [.accept: "image/jpeg,image/png,image/*"])
            #expect(photo.status == .ok)
            #expect(photo.headers[.contentType] == "image/jpeg")
            let image = try decode(photo.body)
            #expect(image.format == .jpeg && image.width == 100 && image.height == 100)

            // No Accept at all, and a source with transparency: PNG keeps the alpha.
            let badge = try await client.execute(uri: try thumbnailURI(client, "badge.png"), method: .get)
            #expect(badge.status == .ok)
            #expect(badge.headers[.contentType] == "image/png")
            #expect(try decode(badge.body).pixels.layout.hasAlpha)
        }
    }

    @Test func etagCacheControlAnd304() async throws {
        try await withServer { client, counters in
            let uri = try thumbnailURI(client, "banner.webp", query: "w=120")
            let first = try await client.execute(uri: uri, method: .get, headers: [.accept: "image/webp"])
            #expect(first.status == .ok)
            let etag = try #require(first.headers[.eTag])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
            #expect(first.headers[.cacheControl] == "public, max-age=86400")
            #expect(first.headers[.vary] == "Accept")

            let again = try await client.execute(
                uri: uri, method: .get, headers: [.accept: "image/webp", .ifNoneMatch: etag])
            #expect(again.status == .notModified)
            #expect(again.body.readableBytes == 0)
            #expect(again.headers[.eTag] == etag)
            #expect(again.headers[.cacheControl] == "public, max-age=86400")

            // The second request was served from the SDK's memory cache: the origin was asked once.
            #expect(counters.value(.samplesServed) == 1)
            #expect(counters.value(.cacheMisses) == 1)
            #expect(counters.value(.cacheHits) == 1)
            #expect(counters.value(.notModified) == 1)

            // Another format of the same thumbnail has another tag.
            let jpeg = try await client.execute(uri: uri, method: .get, headers: [.ifNoneMatch: etag])
            #expect(jpeg.status == .ok)
            #expect(jpeg.headers[.eTag] != etag)
        }
    }

    @Test func forbiddenOrigin() async throws {
        try await withServer({ $0.allowedOrigins = ["127.0.0.1"] }) { client, counters in
            let sources = [
                "http://images.example.com/a.png", "http://localhost:1/a.png", "https://127.0.0.1.example.com/a.png",
            ]
            for source in sources {
                let encoded = source.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let response = try await client.execute(uri: "/thumbnail?url=\(encoded)&w=10", method: .get)
                #expect(response.status == .forbidden, "\(source)")
            }
            #expect(counters.value(.forbidden) == 3)
            #expect(counters.value(.samplesServed) == 0)
        }
    }

    @Test func pixelAndByteBudgets() async throws {
        try await withServer({ $0.maxSourcePixels = 100_000 }) { client, _ in
            let response = try await client.execute(uri: try thumbnailURI(client, "photo.jpg"), method: .get)
            #expect(response.status == .contentTooLarge)
        }
        try await withServer({ $0.maxSourceBytes = 1_000 }) { client, _ in
            let response = try await client.execute(uri: try thumbnailURI(client, "photo.jpg"), method: .get)
            #expect(response.status == .contentTooLarge)
        }
    }

    @Test func badParameters() async throws {
        try await withServer { client, _ in
            for query in ["w=0", "w=5000", "fit=squash&w=10", ""] {
                let response = try await client.execute(
                    uri: try thumbnailURI(client, "photo.jpg", query: query), method: .get)
                #expect(response.status == .badRequest, "\(query)")
            }
            for source in ["file:///etc/passwd", "ftp://127.0.0.1/a.png", "/samples/photo.jpg"] {
                let encoded = source.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let response = try await client.execute(uri: "/thumbnail?url=\(encoded)&w=10", method: .get)
                #expect(response.status == .badRequest, "\(source)")
            }
            let missing = try await client.execute(uri: try thumbnailURI(client, "missing.png"), method: .get)
            #expect(missing.status == .notFound)
        }
    }

    @Test func metricsAndGallery() async throws {
        try await withServer { client, _ in
            _ = try await client.execute(uri: try thumbnailURI(client, "photo.jpg"), method: .get)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status == .ok)
            let text = String(buffer: metrics.body)
            #expect(text.contains("thumbnail_requests_total 1\n"))
            #expect(text.contains("thumbnail_cache_misses_total 1\n"))
            #expect(text.contains("thumbnail_errors_total 0\n"))

            let gallery = try await client.execute(uri: "/", method: .get)
            #expect(gallery.status == .ok)
            #expect(gallery.headers[.contentType] == "text/html; charset=utf-8")
            let html = String(buffer: gallery.body)
            #expect(html.contains("<img src=\"/thumbnail?url=http%3A%2F%2F"))
            #expect(html.contains("photo.jpg"))
        }
    }

    /// An animated source comes out at the requested size, as a still of its first frame.
    @Test func animatedSourceIsResized() async throws {
        try await withServer { client, _ in
            for (query, width, height) in [
                ("w=50&h=50&fit=fill", 50, 50), ("w=50&h=50", 50, 33), ("w=40&fit=cover", 40, 40),
            ] {
                let response = try await client.execute(
                    uri: try thumbnailURI(client, "spinner.gif", query: query), method: .get)
                #expect(response.status == .ok, "\(query)")
                let image = try decode(response.body)
                #expect(image.width == width && image.height == height, "\(query): \(image.width)x\(image.height)")
                #expect(image.frameCount == 1)
                // The first frame: the dot starts right of the centre, at 3 o'clock, on the first background.
                let sample = SampleImages.spinner(width: 300, height: 200, frames: 4)
                let frame = try #require(image.frames.first).pixels
                let background = sample.frames[0].pixels
                #expect(abs(Int(pixel(frame, 0, 0).2) - Int(pixel(background, 0, 0).2)) < 12, "\(query)")
            }
        }
    }

    /// Every redirect hop is checked against the allowlist: an allowlisted origin redirecting elsewhere is refused
    /// before the other host is contacted; redirects that stay inside are followed; loops and long chains fail.
    @Test func redirectHopsAreChecked() async throws {
        let origin = RedirectingOrigin()
        try await origin.app.test(.live) { originClient in
            let originPort = try #require(originClient.port)
            try await withServer({ $0.allowedOrigins = ["127.0.0.1"] }) { client, counters in
                func get(_ path: String) async throws -> TestResponse {
                    let source = "http://127.0.0.1:\(originPort)\(path)"
                    let encoded = source.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                    return try await client.execute(uri: "/thumbnail?url=\(encoded)&w=32", method: .get)
                }
                let outside = try await get("/redirect?to=http://localhost:\(originPort)/image.png")
                #expect(outside.status == .forbidden)
                #expect(origin.hits(host: "localhost") == 0, "the host outside the allowlist was contacted")
                #expect(counters.value(.forbidden) == 1)

                // Two hops, the second outside.
                let chain = try await get("/redirect?to=/redirect%3Fto%3Dhttp://localhost:\(originPort)/image.png")
                #expect(chain.status == .forbidden)
                #expect(origin.hits(host: "localhost") == 0)

                let inside = try await get("/redirect?to=/image.png")
                #expect(inside.status == .ok)
                #expect(try decode(inside.body).width == 32)
                #expect(origin.hits(host: "127.0.0.1") == 1)

                let loop = try await get("/loop")
                #expect(loop.status == .forbidden)
                #expect(origin.hits(host: "127.0.0.1") == 1)
            }
        }
    }

    @Test func acceptParsing() {
        #expect(ContentNegotiation.acceptsWebP("image/webp"))
        #expect(ContentNegotiation.acceptsWebP("text/html, image/WebP;q=0.9"))
        #expect(!ContentNegotiation.acceptsWebP("image/webp;q=0"))
        #expect(!ContentNegotiation.acceptsWebP("image/*,*/*"))
        #expect(!ContentNegotiation.acceptsWebP(nil))
        #expect(ContentNegotiation.matches(ifNoneMatch: "\"a\", W/\"b\"", etag: "\"b\""))
        #expect(ContentNegotiation.matches(ifNoneMatch: "*", etag: "\"b\""))
        #expect(!ContentNegotiation.matches(ifNoneMatch: "\"a\"", etag: "\"b\""))
    }
}

/// A source origin whose answers redirect: `/redirect?to=<location>` (302 to `to`), `/loop` (302 to itself),
/// `/image.png` (a 100x100 PNG). Counts image requests per `Host`.
final class RedirectingOrigin: Sendable {
    private let imageHits = Mutex([String: Int]())

    func hits(host: String) -> Int { imageHits.withLock { $0[host, default: 0] } }

    var app: some ApplicationProtocol {
        let router = Router()
        router.get("/redirect") { request, _ -> Response in
            let target = request.uri.queryParameters.get("to") ?? "/"
            return Response(status: .found, headers: [.location: target])
        }
        router.get("/loop") { _, _ -> Response in Response(status: .found, headers: [.location: "/loop"]) }
        router.get("/image.png") { request, _ -> Response in
            let host = (request.head.authority ?? "").split(separator: ":").first.map(String.init) ?? ""
            self.imageHits.withLock { $0[host, default: 0] += 1 }
            let data = try PNGCoder.shared.encode(
                SampleImages.badge(size: 100), as: .png, options: ImageEncodeOptions())
            return Response(
                status: .ok, headers: [.contentType: "image/png"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }
}
