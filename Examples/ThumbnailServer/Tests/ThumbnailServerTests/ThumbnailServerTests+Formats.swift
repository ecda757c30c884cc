import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import ThumbnailQuery
import WebImage

@testable import ThumbnailServerApp

/// Format negotiation: AVIF first for clients that list it, then WebP, then JPEG/PNG; `Vary: Accept` always.
extension ThumbnailServerTests {
    @Test func avifWhenAccepted() async throws {
        try await withServer { client, _ in
            // What current Chrome and Firefox send for images.
            let accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
            let uri = try thumbnailURI(client, "photo.jpg")
            let response = try await client.execute(uri: uri, method: .get, headers: [.accept: accept])
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "image/avif")
            #expect(response.headers[.vary] == "Accept")
            let image = try decode(response.body)
            #expect(image.format == .avif)
            #expect(image.width == 64 && image.height == 43)  // 960x640 fitted into 64x64

            // Alpha survives in AVIF.
            let badge = try await client.execute(
                uri: try thumbnailURI(client, "badge.png"), method: .get, headers: [.accept: "image/avif"])
            #expect(badge.headers[.contentType] == "image/avif")
            #expect(try decode(badge.body).pixels.layout.hasAlpha)

            // The 304 of an AVIF thumbnail varies by Accept too.
            let etag = try #require(response.headers[.eTag])
            let again = try await client.execute(
                uri: uri, method: .get, headers: [.accept: accept, .ifNoneMatch: etag])
            #expect(again.status == .notModified)
            #expect(again.headers[.vary] == "Accept")
        }
    }

    /// `image/avif;q=0` means "not AVIF"; without any Accept the answer is JPEG. Asked in that order after an AVIF
    /// answer for the same thumbnail, so a cached AVIF thumbnail is never what a non-AVIF client gets.
    @Test func avifRefusedOrNotListed() async throws {
        try await withServer { client, counters in
            let uri = try thumbnailURI(client, "photo.jpg", query: "w=80&h=80&fit=cover")
            let avif = try await client.execute(uri: uri, method: .get, headers: [.accept: "image/avif"])
            #expect(avif.headers[.contentType] == "image/avif")

            let refusedWithWebP = try await client.execute(
                uri: uri, method: .get, headers: [.accept: "image/avif;q=0, image/webp"])
            #expect(refusedWithWebP.status == .ok)
            #expect(refusedWithWebP.headers[.contentType] == "image/webp")
            #expect(refusedWithWebP.headers[.vary] == "Accept")
            #expect(try decode(refusedWithWebP.body).format == .webp)

            let refused = try await client.execute(
                uri: uri, method: .get, headers: [.accept: "image/avif;q=0,image/*"])
            #expect(refused.headers[.contentType] == "image/jpeg")
            #expect(try decode(refused.body).format == .jpeg)

            let none = try await client.execute(uri: uri, method: .get)
            #expect(none.status == .ok)
            #expect(none.headers[.contentType] == "image/jpeg")
            #expect(none.headers[.vary] == "Accept")
            let image = try decode(none.body)
            #expect(image.format == .jpeg && image.width == 80 && image.height == 80)

            // One download of the original served every format.
            #expect(counters.value(.samplesServed) == 1)
        }
    }

    /// The chosen format is part of the thumbnail's cache key, and the cached thumbnail is stored in that format.
    @Test func formatIsPartOfTheCacheKey() async throws {
        let renderer = ThumbnailRenderer(
            manager: ImageManager(cache: CachesManager([]), loader: LoadersManager(loaders: [])),
            maxSourcePixels: 1 << 20, quality: 0.8)
        let request = try ThumbnailRequest(query: ["url": "http://127.0.0.1/a.jpg", "w": "40"], maxSide: 100)
        let keys = ContentNegotiation.Encoding.allCases.map {
            renderer.context(for: request, encoding: $0).imageTransformer?.transformerKey
        }
        #expect(Set(keys).count == ContentNegotiation.Encoding.allCases.count, "\(keys)")
        let resizeKey = ResizeTransformer(size: request.size, mode: request.fit.resizeMode).transformerKey
        #expect(keys.allSatisfy { $0?.hasPrefix(resizeKey) == true }, "\(keys)")

        for coder: any ImageCoder in [JPEGCoder.shared, WebPCoder.shared, AVIFCoder.shared] {
            CodersManager.shared.addCoder(coder)
        }
        let image = SampleImages.landscape(width: 40, height: 20)
        for (encoding, format) in [
            (ContentNegotiation.Encoding.avif, ImageFormat.avif), (.webp, .webp), (.jpegOrPNG, .jpeg),
        ] {
            let serializer = try #require(renderer.context(for: request, encoding: encoding).cacheSerializer)
            let data = try #require(serializer.cacheData(for: image, originalData: nil, imageURL: request.source))
            #expect(ImageFormat.detect(data) == format, "\(encoding)")
        }
    }

    /// Every malformed query is refused with a message naming what is wrong (the server answers 400 with it), and
    /// no query or configuration traps: the parser `fuzz-thumbnail-query` runs on arbitrary input.
    @Test(arguments: [
        (["w": "10"], "url"),
        (["url": "ftp://h/a.gif", "w": "10"], "url"),
        (["url": "http:///a.gif", "w": "10"], "url"),
        (["url": "/a.gif", "w": "10"], "url"),
        (["url": "http://h/a.gif"], "give w"),
        (["url": "http://h/a.gif", "w": "0"], "w must"),
        (["url": "http://h/a.gif", "w": "-3"], "w must"),
        (["url": "http://h/a.gif", "h": "99999999999999999999999"], "h must"),
        (["url": "http://h/a.gif", "w": "10", "h": "ten"], "h must"),
        (["url": "http://h/a.gif", "w": "10", "fit": "stretch"], "fit must"),
    ])
    func malformedQueriesAreRefusedByName(query: [String: String], says expected: String) {
        #expect {
            _ = try ThumbnailRequest(query: query, maxSide: 100)
        } throws: { error in
            (error as? ThumbnailRequest.Invalid)?.message.hasPrefix(expected) == true
        }
    }

    @Test func aServerThatAllowsNoSizeRefusesEverySizeInsteadOfTrapping() {
        #expect(throws: ThumbnailRequest.Invalid.self) {
            _ = try ThumbnailRequest(query: ["url": "http://h/a.gif", "w": "1"], maxSide: 0)
        }
    }

    @Test func encodingChoice() {
        typealias N = ContentNegotiation
        #expect(N.encoding(accept: "image/avif,image/webp", canEncodeAVIF: true) == .avif)
        #expect(N.encoding(accept: "image/webp, image/AVIF;q=0.5", canEncodeAVIF: true) == .avif)
        #expect(N.encoding(accept: "image/avif;q=0,image/webp", canEncodeAVIF: true) == .webp)
        #expect(N.encoding(accept: "image/avif;q=0.0", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: "image/avif,image/webp", canEncodeAVIF: false) == .webp)
        #expect(N.encoding(accept: "image/*,*/*", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: nil, canEncodeAVIF: true) == .jpegOrPNG)
    }
}
