import Foundation
import HTTPTestSupport
import ImageCore
import JPEGCoder
import PNGCoder
import Synchronization
import Testing

@testable import ImageService

/// A source whose bytes end before its image (an origin caught mid-write, a file cut short on its disk, sent with
/// a matching `Content-Length`): the request is answered with what could be decoded (or refused when nothing
/// could), but nothing made from it is kept — not the result, not the source, not by the caches in front
/// (`no-store`) — so the next request fetches the source again and the whole image replaces it at once. Before,
/// the cut JPEG's thumbnail was cached for a day, and the cut PNG answered 415 from its cached copy for the
/// source's whole lifetime.
@Suite(.timeLimit(.minutes(2)))
struct IncompleteSourceTests {
    static func cut(_ whole: [UInt8]) -> [UInt8] { Array(whole.prefix(whole.count * 2 / 5)) }

    static func jpeg() throws -> [UInt8] {
        let pixels = try PerceptualAndPlaceholderTests.texturedPNG(width: 480, height: 320)
        let image = try PNGCoder.shared.decode(Data(pixels), options: ImageDecodeOptions())
        return Array(try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9)))
    }

    @Test(arguments: ["jpeg", "png"])
    func aCutSourceIsAnsweredButKeptNowhere(format: String) async throws {
        let whole = format == "jpeg" ? try Self.jpeg() : try PerceptualAndPlaceholderTests.texturedPNG()
        let served = Mutex(Self.cut(whole))
        let fixture = try await ServiceFixture.start { _ in
            .respond(
                headers: [("Content-Type", "image/\(format)"), ("Cache-Control", "max-age=3600")],
                body: served.withLock { $0 })
        }
        // JPEG decodes what it has (the rest grey): answered, not kept. PNG's cut IDAT is refused: 415.
        let first = await fixture.get("/photo", "w=120&format=png")
        let again = await fixture.get("/photo", "w=120&format=png")
        for answer in [first, again] {
            if format == "jpeg" {
                #expect(answer.status == .ok, "the decodable part is answered")
                #expect(answer.headers[.cacheControl]?.contains("no-store") == true)
            } else {
                #expect(answer.status == .unsupportedMediaType)
            }
        }
        #expect(fixture.counter("incomplete_sources_total") == (format == "jpeg" ? 2 : 0))
        // Asked again while the origin still has the cut file: fetched and rendered again, never from a cache.
        #expect(fixture.counter("origin_requests_total") == 2)

        served.withLock { $0 = whole }
        let healed = await fixture.get("/photo", "w=120&format=png")
        #expect(healed.status == .ok)
        #expect(healed.headers[.cacheControl]?.hasPrefix("public") == true)
        #expect(healed.body != first.body, "the whole image, not the cut one")
        #expect(fixture.counter("origin_requests_total") == 3)
        #expect(fixture.counter("incomplete_sources_total") == (format == "jpeg" ? 2 : 0))
        // Now kept: the next request is a cache hit.
        let cached = await fixture.get("/photo", "w=120&format=png")
        #expect(cached.body == healed.body)
        #expect(fixture.counter("origin_requests_total") == 3)
        await fixture.stop()
    }

    /// An origin that answers 200 with no bytes at all (a file being written, a proxy that cut the body) broke the
    /// fetch: 502, as for any origin fault, and nothing kept. Before, it was 415, which blames the client's request.
    @Test func anEmptySourceIsAnOriginFault() async throws {
        let whole = try PerceptualAndPlaceholderTests.texturedPNG()
        let served = Mutex<[UInt8]>([])
        let fixture = try await ServiceFixture.start { _ in
            .respond(
                headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")],
                body: served.withLock { $0 })
        }
        for _ in 0..<2 {
            let answer = await fixture.get("/empty", "w=120&format=png")
            #expect(answer.status == .badGateway)
            #expect(String(decoding: answer.body, as: UTF8.self).contains("empty body"))
            #expect(answer.headers[.cacheControl] == "no-store")
        }
        #expect(fixture.counter("origin_requests_total") == 2, "nothing kept: each request asks the origin")
        served.withLock { $0 = whole }
        let healed = await fixture.get("/empty", "w=120&format=png")
        #expect(healed.status == .ok)
        await fixture.stop()
    }
}
