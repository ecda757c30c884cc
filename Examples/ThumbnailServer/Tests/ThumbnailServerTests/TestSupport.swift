import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ImageService
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing
import WebImage

@testable import ThumbnailServerApp

/// Live servers for the tests: the thumbnail server on 127.0.0.1 with its own cache folder, an origin that
/// serves scripted images and counts requests, and an HTTP client that can send many requests at once.
enum Live {
    /// A test configuration: unsigned requests allowed, the test origin's address exempt from the address
    /// policy, no metrics listener, a fresh cache folder.
    static func configuration(_ directory: URL) -> ThumbnailServerConfiguration {
        var configuration = ThumbnailServerConfiguration()
        configuration.port = 0
        configuration.metricsPort = nil
        configuration.cacheDirectory = directory
        configuration.allowUnsigned = true
        configuration.allowedAddresses = ["127.0.0.1/32"]
        configuration.logLevel = "error"
        return configuration
    }

    /// Runs `body` against a live server built from the test configuration adjusted by `adjust`.
    @discardableResult
    static func withServer<T: Sendable>(
        _ adjust: (inout ThumbnailServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ server: ThumbnailServer, _ base: String) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = configuration(directory)
        adjust(&configuration)
        var logger = Logger(label: "thumbnail-server-test")
        logger.logLevel = .error
        let server = try await ThumbnailServer(configuration, logger: logger)
        return try await server.application.test(.live) { client in
            try await body(server, "http://127.0.0.1:\(try #require(client.port))")
        }
    }

    /// Runs `body` with `origin` listening on `host` (port 0: a free one); `body` gets the origin's base URL.
    static func withOrigin(
        _ origin: TestOrigin, host: String = "127.0.0.1", port: Int = 0,
        _ body: @Sendable (_ base: String, _ port: Int) async throws -> Void
    ) async throws {
        try await origin.application(host: host, port: port).test(.live) { client in
            let port = try #require(client.port)
            try await body("http://\(host):\(port)", port)
        }
    }

    /// `/thumbnail?url=<source>&<query>` with the source percent-encoded.
    static func thumbnailPath(source: String, _ query: String = "w=64&h=64") -> String {
        "/thumbnail?url=\(QueryString.encode(source))" + (query.isEmpty ? "" : "&\(query)")
    }

    /// Registers the coders the tests decode responses with (the server registers them too, when one runs here).
    static let coders: Void = {
        for coder: any ImageCoder in [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared,
        ] {
            CodersManager.shared.addCoder(coder)
        }
    }()

    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(60)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 200
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// A response as the tests read it.
    struct Reply: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: Data

        func header(_ name: String) -> String? { headers.first(name: name) }

        /// The body decoded by the SDK's coders.
        func image() throws -> Image {
            _ = Live.coders
            return try CodersManager.shared.decode(body, options: ImageDecodeOptions())
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// GETs `url` and expects `status` (a failure names the body the server sent).
    static func expectStatus(_ url: String, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let reply = try await get(url)
        #expect(reply.status == status, "\(url): \(reply.text)", sourceLocation: sourceLocation)
    }

    /// GETs `url` (redirects not followed).
    static func get(_ url: String, headers: [(String, String)] = []) async throws -> Reply {
        try await send(.GET, url, headers: headers)
    }

    /// Sends `method` to `url` (redirects not followed).
    static func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 64 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: body))
    }
}

/// An origin with scripted answers per path: bytes, content type, extra headers, a delay, or a redirect; every
/// request is counted per path and per `Host`.
final class TestOrigin: Sendable {
    /// One scripted answer.
    struct Answer: Sendable {
        var status: Int = 200
        var data = Data()
        var contentType = "image/jpeg"
        var headers: [String: String] = [:]
        var delay: Double = 0
    }

    private let answers: Mutex<[String: Answer]>
    private let hits = Mutex<[String: Int]>([:])
    private let hosts = Mutex<[String: Int]>([:])

    init(_ answers: [String: Answer] = [:]) {
        self.answers = Mutex(answers)
    }

    /// Sets the answer for `path`.
    func set(_ path: String, _ answer: Answer) { answers.withLock { $0[path] = answer } }

    /// Requests received for `path`.
    func hits(_ path: String) -> Int { hits.withLock { $0[path, default: 0] } }

    /// Requests received in all.
    var totalHits: Int { hits.withLock { $0.values.reduce(0, +) } }

    /// Requests received whose `Host` header named `host` (port stripped).
    func hits(host: String) -> Int { hosts.withLock { $0[host, default: 0] } }

    func application(host: String, port: Int) -> some ApplicationProtocol {
        let router = Router()
        router.get("/**") { request, _ -> Response in
            let path = request.uri.path
            self.hits.withLock { $0[path, default: 0] += 1 }
            let authority = request.head.authority ?? ""
            let name = authority.hasPrefix("[") ? authority : String(authority.split(separator: ":").first ?? "")
            self.hosts.withLock { $0[name, default: 0] += 1 }
            guard let answer = self.answers.withLock({ $0[path] }) else { return Response(status: .notFound) }
            if answer.delay > 0 { try await Task.sleep(for: .milliseconds(Int64(answer.delay * 1000))) }
            var headers: HTTPFields = [.contentType: answer.contentType]
            for (name, value) in answer.headers { headers[HTTPField.Name(name)!] = value }
            return Response(
                status: .init(code: answer.status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.data)))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port)))
    }
}

/// Images the tests serve from the origin.
enum TestImages {
    static func jpeg(width: Int = 960, height: Int = 640, quality: Double = 0.9) throws -> Data {
        try JPEGCoder.shared.encode(
            SampleImages.landscape(width: width, height: height), as: .jpeg,
            options: ImageEncodeOptions(quality: quality))
    }

    static func png(_ image: Image) throws -> Data {
        try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions())
    }

    /// A solid image with one coloured square of `side` at (`x`, `y`): where it ends up shows where a crop cut.
    static func marked(width: Int, height: Int, square: (x: Int, y: Int, side: Int), colour: (UInt8, UInt8, UInt8))
        -> Image
    {
        var bytes = [UInt8](repeating: 128, count: width * height * 3)
        for y in square.y..<min(height, square.y + square.side) {
            for x in square.x..<min(width, square.x + square.side) {
                let i = (y * width + x) * 3
                (bytes[i], bytes[i + 1], bytes[i + 2]) = colour
            }
        }
        return Image(pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes))
    }

    /// The RGB of pixel (`x`, `y`).
    static func rgb(_ image: Image, _ x: Int, _ y: Int) -> (Int, Int, Int) {
        let pixels = image.pixels
        let i = y * pixels.bytesPerRow + x * pixels.layout.bytesPerPixel
        let bytes = pixels.bytes
        if pixels.layout == .gray8 || pixels.layout == .grayAlpha8 {
            return (Int(bytes[i]), Int(bytes[i]), Int(bytes[i]))
        }
        return (Int(bytes[i]), Int(bytes[i + 1]), Int(bytes[i + 2]))
    }

    static func close(_ a: (Int, Int, Int), _ b: (Int, Int, Int), within tolerance: Int = 40) -> Bool {
        abs(a.0 - b.0) <= tolerance && abs(a.1 - b.1) <= tolerance && abs(a.2 - b.2) <= tolerance
    }

    /// `jpeg` with an EXIF APP1 segment whose orientation is `orientation`, inserted after SOI.
    static func withEXIFOrientation(_ jpeg: Data, _ orientation: UInt16) -> Data {
        // TIFF header (big-endian), one IFD entry: tag 0x0112 (orientation), SHORT, count 1.
        let tiff: [UInt8] = [
            0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01,
            UInt8(orientation >> 8), UInt8(orientation & 0xff), 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        let payload: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        var result = Data(jpeg.prefix(2))
        result.append(contentsOf: [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xff)] + payload)
        result.append(jpeg.dropFirst(2))
        return result
    }
}
