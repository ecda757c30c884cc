import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
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

    func decode(_ body: ByteBuffer) throws -> Image {
        try CodersManager.shared.decode(Data(buffer: body), options: ImageDecodeOptions())
    }

    @Test func webpWhenAccepted() async throws {
        try await withServer { client, _ in
            let uri = try thumbnailURI(client, "photo.jpg")
            let response = try await client.execute(
                uri: uri, method: .get, headers: [.accept: "image/avif,image/webp,image/*;q=0.8"])
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
