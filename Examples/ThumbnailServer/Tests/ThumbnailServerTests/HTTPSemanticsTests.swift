import AsyncHTTPClient
import Foundation
import ImageService
import NIOHTTP1
import Testing

@testable import ThumbnailServerApp

/// The adapter keeps the service's framing on the wire: a `HEAD` states the `Content-Length` its `GET` sends
/// (before, Hummingbird's empty body made it 0), and other methods get the service's 405 with `Allow` (before,
/// the router's 404).
@Suite struct HTTPSemanticsTests {
    @Test func headStatesTheLengthOfTheGet() async throws {
        let origin = TestOrigin(["/photo.jpg": .init(data: try TestImages.jpeg(width: 640, height: 480))])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                for query in ["w=120", "w=-1", "w=120&format=blurhash"] {
                    let url = base + Live.thumbnailPath(source: originBase + "/photo.jpg", query)
                    // HEAD first (a cold miss), then GET (from cache), then HEAD again (from cache).
                    let coldHead = try await Live.send(.HEAD, url)
                    let get = try await Live.get(url)
                    let warmHead = try await Live.send(.HEAD, url)
                    #expect(!get.body.isEmpty, "\(query)")
                    #expect(get.header("Content-Length") == String(get.body.count), "\(query)")
                    for head in [coldHead, warmHead] {
                        #expect(head.status == get.status, "\(query)")
                        #expect(head.body.isEmpty, "\(query)")
                        #expect(head.header("Content-Length") == String(get.body.count), "\(query)")
                        #expect(head.header("Content-Type") == get.header("Content-Type"), "\(query)")
                        #expect(head.header("ETag") == get.header("ETag"), "\(query)")
                    }
                }
            }
        }
    }

    @Test func otherMethodsAreNotAllowed() async throws {
        try await Live.withServer { _, base in
            let url = base + Live.thumbnailPath(source: "http://127.0.0.1:9/photo.jpg", "w=120")
            for method: HTTPMethod in [.POST, .PUT, .PATCH, .DELETE, .OPTIONS] {
                let reply = try await Live.send(method, url)
                #expect(reply.status == 405, "\(method): \(reply.text)")
                #expect(reply.header("Allow") == "GET, HEAD", "\(method)")
            }
        }
    }
}
