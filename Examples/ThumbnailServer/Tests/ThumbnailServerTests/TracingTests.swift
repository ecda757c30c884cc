import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import ThumbnailServerApp

/// Spans leave the process: with ``ThumbnailServerConfiguration/tracesEndpoint`` set, swift-otel sends OTLP/HTTP
/// to a collector (here one on 127.0.0.1 that keeps what it receives).
@Suite struct TracingTests {
    /// A request's stages reach the collector as spans of the client's own trace (its `traceparent`), named for the
    /// server; spans still queued when the server stops are sent on the way out, not lost.
    @Test func stagesAreExportedInTheClientsTraceAndFlushedAtShutdown() async throws {
        let collector = TestCollector()
        let origin = TestOrigin(["/photo.jpg": .init(data: try TestImages.jpeg(width: 320, height: 200))])
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        try await collector.run { collectorBase in
            try await Live.withOrigin(origin) { originBase, _ in
                try await Live.withServer({ $0.tracesEndpoint = collectorBase + "/v1/traces" }) { _, base in
                    let reply = try await Live.get(
                        base + Live.thumbnailPath(source: originBase + "/photo.jpg", "w=64"),
                        headers: [("traceparent", "00-\(traceID)-00f067aa0ba902b7-01")])
                    #expect(reply.status == 200)
                    // Within the batch delay (5 s): nothing is sent yet, so what arrives comes from the shutdown.
                }
            }
            // The server has stopped: its exporter flushed on the way.
            let bodies = collector.bodies
            #expect(!bodies.isEmpty, "no OTLP export reached the collector")
            let all = bodies.reduce(into: [UInt8]()) { $0 += $1 }
            for name in [
                "image_service.request", "fetch", "decode", "transform", "encode", "store", "thumbnail-server",
            ] {
                #expect(Self.contains(all, Array(name.utf8)), "no \(name) in the export")
            }
            // OTLP/protobuf carries the trace id as its 16 bytes.
            let id = stride(from: 0, to: traceID.count, by: 2).map { offset -> UInt8 in
                let start = traceID.index(traceID.startIndex, offsetBy: offset)
                return UInt8(traceID[start..<traceID.index(start, offsetBy: 2)], radix: 16)!
            }
            #expect(Self.contains(all, id), "the spans are not in the client's trace")
            #expect(collector.contentTypes.allSatisfy { $0 == "application/x-protobuf" }, "\(collector.contentTypes)")
        }
    }

    /// An endpoint swift-otel cannot use is a configuration error that names the setting, before anything starts.
    @Test func anUnusableEndpointIsAConfigurationError() async throws {
        let error = await #expect(throws: ConfigurationError.self) {
            try await Live.withServer({ $0.tracesEndpoint = "ftp://collector/v1/traces" }) { _, _ in }
        }
        #expect(error?.message.hasPrefix("TRACES_ENDPOINT") == true, "\(error?.message ?? "")")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}

/// An OTLP/HTTP collector that keeps every body posted to `/v1/traces` and answers an empty success.
final class TestCollector: Sendable {
    private let received = Mutex<[(contentType: String, body: [UInt8])]>([])

    /// The bodies received so far.
    var bodies: [[UInt8]] { received.withLock { $0.map(\.body) } }
    /// Their content types.
    var contentTypes: [String] { received.withLock { $0.map(\.contentType) } }

    /// Runs `body` while the collector listens on 127.0.0.1; `body` gets its base URL.
    func run(_ body: @Sendable (_ base: String) async throws -> Void) async throws {
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 16 << 20)
            let contentType = request.headers[.contentType] ?? ""
            self.received.withLock { $0.append((contentType, Array(buffer: bytes))) }
            return Response(
                status: .ok, headers: [.contentType: "application/x-protobuf"],
                body: ResponseBody(byteBuffer: ByteBuffer()))
        }
        let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await application.test(.live) { client in
            try await body("http://127.0.0.1:\(try #require(client.port))")
        }
    }
}
