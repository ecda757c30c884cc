import Foundation
import HTTPTestSupport
import HTTPTypes
import ImageCore
import Testing

@testable import ImageService

/// How every answer is framed, whatever produced it: `HEAD` gets the status and headers `GET` gets, with an empty
/// body and the `Content-Length` the `GET` sends (RFC 9110 §9.3.2); every other answer states the length of its
/// body; a method other than `GET` or `HEAD` is a 405 naming the two.
@Suite(.timeLimit(.minutes(2)))
struct HTTPFramingTests {
    /// Requests that reach every kind of answer: a rendered thumbnail, the same from cache, a placeholder, a 304,
    /// and the failures (a bad query, a source the policy refuses, a missing source, an undecodable one).
    static let requests: [(name: String, path: String, query: String, headers: HTTPFields)] = [
        ("rendered", "/photo.png", "w=40", [:]),
        ("placeholder", "/photo.png", "w=40&format=blurhash", [:]),
        ("negotiated", "/photo.png", "w=24", [.accept: "image/webp"]),
        ("not modified", "/photo.png", "w=40", [.ifNoneMatch: "*"]),
        ("bad query", "/photo.png", "w=-1", [:]),
        ("missing", "/missing.png", "w=40", [:]),
        ("undecodable", "/text.png", "w=40", [:]),
    ]

    static func fixture() async throws -> ServiceFixture {
        let photo = try ServiceImages.png(width: 96, height: 64)
        return try await ServiceFixture.start { request in
            switch request.path {
            case "/photo.png":
                .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: photo)
            case "/text.png": .respond(headers: [("Content-Type", "image/png")], body: Array("not an image".utf8))
            default: .respond(status: .notFound)
            }
        }
    }

    @Test func headIsGetWithoutTheBody() async throws {
        let fixture = try await Self.fixture()
        for request in Self.requests {
            let source = QueryString.encode("http://127.0.0.1:\(fixture.origin.port)\(request.path)")
            let query = "url=\(source)&\(request.query)"
            // Twice each: the second GET and HEAD are answered from the caches the first filled.
            for round in 0..<2 {
                let get = await fixture.service.respond(
                    to: ImageServiceRequest(method: .get, path: "/thumbnail", query: query, headers: request.headers))
                let head = await fixture.service.respond(
                    to: ImageServiceRequest(method: .head, path: "/thumbnail", query: query, headers: request.headers))
                let label = "\(request.name), round \(round): GET \(get.status.code), HEAD \(head.status.code)"
                #expect(head.status == get.status, "\(label)")
                #expect(head.body.isEmpty, "\(label)")
                if get.status == .notModified {
                    #expect(get.body.isEmpty && get.headers[.contentLength] == nil, "\(label)")
                } else {
                    #expect(get.headers[.contentLength] == String(get.body.count), "\(label)")
                    #expect(!get.body.isEmpty, "\(label): every answer but a 304 has a body")
                }
                // The same headers but the per-answer ones a HEAD may not share (none, today).
                #expect(Self.comparable(head.headers) == Self.comparable(get.headers), "\(label)")
            }
        }
        await fixture.stop()
    }

    @Test(arguments: [HTTPRequest.Method.post, .put, .patch, .delete, .options])
    func otherMethodsAreNotAllowed(method: HTTPRequest.Method) async throws {
        let fixture = try await Self.fixture()
        let source = QueryString.encode("http://127.0.0.1:\(fixture.origin.port)/photo.png")
        let answer = await fixture.service.respond(
            to: ImageServiceRequest(method: method, path: "/thumbnail", query: "url=\(source)&w=40"))
        #expect(answer.status == .methodNotAllowed)
        #expect(answer.headers[.allow] == "GET, HEAD")
        #expect(answer.headers[.contentLength] == String(answer.body.count))
        #expect(fixture.counter("origin_requests_total") == 0, "a refused method never reaches the origin")
        await fixture.stop()
    }

    /// Headers as a sorted list of name and value.
    static func comparable(_ headers: HTTPFields) -> [String] {
        headers.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
    }
}
