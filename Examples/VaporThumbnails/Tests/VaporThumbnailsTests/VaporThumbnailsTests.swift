import Foundation
import ImageCore
import ImageService
import NIOCore
import NIOPosix
import PNGCoder
import Testing
import VaporTesting

@testable import VaporThumbnailsApp

/// The service mounted in a Vapor app, on a real listener: the app's own routes answer beside it; a thumbnail is
/// made from a source the app itself serves, cached, revalidated with 304; signatures and the source policy hold.
@Suite(.serialized) struct VaporThumbnailsTests {
    static func freePort() async throws -> Int {
        // Below the kernel's ephemeral range (32768 and up by default), where no outgoing connection's local port
        // lands: a port bound to 0 and released could be taken by a client before the server binds it.
        for _ in 0..<200 {
            let port = Int.random(in: 20_000...32_000)
            guard
                let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: port).get()
            else { continue }
            try await channel.close()
            return port
        }
        struct NoFreePort: Error {}
        throw NoFreePort()
    }

    static let sample: Data = {
        let bytes = [UInt8](repeating: 90, count: 120 * 80 * 3)
        let image = Image(pixels: PixelBuffer(width: 120, height: 80, layout: .rgb8, bytes: bytes))
        return (try? PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions())) ?? Data()
    }()

    /// Runs `body` against the app on a free port, with a service configured by `adjust`.
    static func withApp(
        _ adjust: (inout ImageServiceConfiguration) -> Void = { _ in },
        _ body: (_ app: Application, _ port: Int, _ service: ImageService) async throws -> Void
    ) async throws {
        let port = try await freePort()
        var settings = ImageServiceConfiguration()
        settings.allowUnsigned = true
        settings.allowedAddresses = ["127.0.0.1/32"]
        settings.cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("vapor-\(UUID())")
        adjust(&settings)
        let service = try ImageService(configuration: settings)
        try await VaporTesting.withApp { app in
            configure(app, service: service)
            // The test's origin is one of the app's own routes.
            app.get("assets", "sample.png") { _ in
                Response(status: .ok, headers: ["Content-Type": "image/png"], body: .init(data: Self.sample))
            }
            try await body(app, port, service)
        }
        try? FileManager.default.removeItem(at: settings.cacheDirectory!)
    }

    static func thumbnail(_ port: Int, _ query: String = "w=60&format=png") -> String {
        "img/thumbnail?url=\(QueryString.encode("http://127.0.0.1:\(port)/assets/sample.png"))&\(query)"
    }

    @Test func theAppsRoutesAndThumbnailsSideBySide() async throws {
        try await Self.withApp { app, port, _ in
            #expect(app.http.server.configuration.backlog == 4096, "a connect burst is held, not dropped")
            let tester = try app.testing(method: .running(hostname: "127.0.0.1", port: port))
            try await tester.test(.GET, "hello/vapor") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == "Hello, vapor.\n")
            }
            var etag = ""
            try await tester.test(.GET, Self.thumbnail(port)) { response in
                #expect(response.status == .ok)
                #expect(response.headers.contentType?.description == "image/png")
                let image = try PNGCoder.shared.decode(Data(buffer: response.body), options: ImageDecodeOptions())
                #expect(image.width == 60 && image.height == 40)
                etag = response.headers.first(name: "ETag") ?? ""
            }
            #expect(!etag.isEmpty)
            try await tester.test(.GET, Self.thumbnail(port), headers: ["If-None-Match": etag]) { response in
                #expect(response.status == .notModified)
            }
            try await tester.test(.GET, "img/thumbnail?url=ftp%3A%2F%2Fx&w=10") { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    /// A HEAD states the `Content-Length` its GET sends (Vapor's own framing would say 0), and other methods get
    /// the service's 405 with `Allow` (the router alone would say 404).
    @Test func headAndOtherMethodsAreFramedAsTheServiceSays() async throws {
        try await Self.withApp { app, port, _ in
            let tester = try app.testing(method: .running(hostname: "127.0.0.1", port: port))
            for query in ["w=60&format=png", "w=-1"] {
                var length: String?
                var status: HTTPStatus?
                try await tester.test(.GET, Self.thumbnail(port, query)) { response in
                    #expect(response.body.readableBytes > 0, "\(query)")
                    #expect(response.headers.first(name: "Content-Length") == String(response.body.readableBytes))
                    length = response.headers.first(name: "Content-Length")
                    status = response.status
                }
                try await tester.test(.HEAD, Self.thumbnail(port, query)) { response in
                    #expect(response.status == status, "\(query)")
                    #expect(response.body.readableBytes == 0, "\(query)")
                    #expect(response.headers.first(name: "Content-Length") == length, "\(query)")
                }
            }
            for method: HTTPMethod in [.POST, .PUT, .PATCH, .DELETE, .OPTIONS] {
                try await tester.test(method, Self.thumbnail(port)) { response in
                    #expect(response.status == .methodNotAllowed, "\(method)")
                    #expect(response.headers.first(name: "Allow") == "GET, HEAD", "\(method)")
                }
            }
        }
    }

    @Test func signaturesAndThePolicyHold() async throws {
        try await Self.withApp({
            $0.allowUnsigned = false
            $0.signingKeys = ["00112233445566778899aabbccddeeff"]
        }) { app, port, service in
            let tester = try app.testing(method: .running(hostname: "127.0.0.1", port: port))
            try await tester.test(.GET, Self.thumbnail(port)) { response in
                #expect(response.status == .forbidden)
            }
            // Signed for the path as mounted.
            let query = String(Self.thumbnail(port).split(separator: "?", maxSplits: 1)[1])
            let signed = try #require(service.sign(path: "/img/thumbnail", query: query))
            try await tester.test(.GET, String(signed.dropFirst())) { response in
                #expect(response.status == .ok)
            }
        }
    }

    /// Sends `raw` on a new connection and returns what came back until the first answer's head ended.
    static func exchange(_ port: Int, _ raw: String) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: raw))
            var text = ""
            for try await chunk in inbound {
                text += String(buffer: chunk)
                if text.contains("\r\n\r\n") { break }
            }
            return text
        }
    }

    /// A request the server can't take as framed is refused on every route, the service's and the app's: it was
    /// served before (`gzip, chunked` read as merely chunked; two `Host` fields).
    @Test func requestsTheServerCannotTakeAsFramedAreRefused() async throws {
        try await Self.withApp { app, port, _ in
            try await app.server.start(address: .hostname("127.0.0.1", port: port))
            let cases: [(String, String)] = [
                ("Host: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "HTTP/1.1 501"),
                ("Host: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", "HTTP/1.1 400"),
                ("Host: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400"),
                ("\r\n", "HTTP/1.1 400"),
            ]
            for target in ["/hello/vapor", "/" + Self.thumbnail(port)] {
                for (rest, expected) in cases {
                    let answer = try await Self.exchange(port, "GET \(target) HTTP/1.1\r\n" + rest)
                    // NIO's decoder itself refuses `chunked` twice: it closes the connection with no answer.
                    let closed = answer.isEmpty && rest.contains("chunked, chunked")
                    #expect(
                        answer.hasPrefix(expected) || closed, "\(target) with \(rest.debugDescription): \(answer)")
                }
                // Still served: one Host, no transfer coding or `chunked` once; HTTP/1.0 without a Host.
                let chunked = "Host: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                #expect(try await Self.exchange(port, "GET \(target) HTTP/1.1\r\n" + chunked).hasPrefix("HTTP/1.1 200"))
                let old = try await Self.exchange(port, "GET \(target) HTTP/1.0\r\n\r\n")
                #expect(old.hasPrefix("HTTP/1.0 200") || old.hasPrefix("HTTP/1.1 200"), "\(target): \(old)")
            }
            await app.server.shutdown()
        }
    }
}
