import Foundation
import HTTPTestSupport
import HTTPTypes
import ImageCore
import ImageTestSupport
import InMemoryTracing
import MetricsTestKit
import PNGCoder
import Testing

@testable import ImageService

/// A service on a scripted origin, with its metrics and spans in memory and its caches in a folder of its own.
struct ServiceFixture: Sendable {
    let service: ImageService
    let origin: TestHTTPServer
    let metrics: TestMetrics
    let tracer: InMemoryTracer
    let directory: URL

    /// Starts an origin that answers with `script` and a service configured by `adjust` (unsigned requests allowed,
    /// the origin's address allowed, metrics prefixed `test`).
    static func start(
        _ adjust: (inout ImageServiceConfiguration) -> Void = { _ in },
        script: @escaping TestHTTPServer.Script
    ) async throws -> ServiceFixture {
        let origin = try await TestHTTPServer.start(threads: 2, script: script)
        return try service(on: origin, adjust)
    }

    /// A service on `origin`, configured by `adjust` from the test defaults, with metrics, spans and a cache folder
    /// of its own.
    private static func service(
        on origin: TestHTTPServer, _ adjust: (inout ImageServiceConfiguration) -> Void
    ) throws -> ServiceFixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("image-service-\(UUID())")
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        var configuration = ImageServiceConfiguration()
        configuration.allowUnsigned = true
        configuration.allowedAddresses = ["127.0.0.1/32"]
        configuration.cacheDirectory = directory
        configuration.metricsFactory = metrics
        configuration.metricsPrefix = "test"
        configuration.tracer = tracer
        adjust(&configuration)
        let service = try ImageService(configuration: configuration)
        return ServiceFixture(service: service, origin: origin, metrics: metrics, tracer: tracer, directory: directory)
    }

    /// Another service on this fixture's origin (the same source URLs), configured by `adjust` from the test
    /// defaults: this service restarted with other settings, or a replica. Stop it with ``stopService()``.
    func replica(_ adjust: (inout ImageServiceConfiguration) -> Void) throws -> ServiceFixture {
        try Self.service(on: origin, adjust)
    }

    /// Stops the service and removes its cache folder, leaving the origin to others.
    func stopService() async {
        await service.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    func stop() async {
        await service.shutdown()
        await origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// `GET /thumbnail?url=<origin path>&<query>` through the service.
    func get(_ path: String, _ query: String = "w=32", headers: HTTPFields = [:]) async -> ImageServiceResponse {
        let source = QueryString.encode("http://127.0.0.1:\(origin.port)\(path)")
        return await service.respond(
            to: ImageServiceRequest(path: "/thumbnail", query: "url=\(source)&\(query)", headers: headers))
    }

    /// Times a stage's timer recorded (`decode`, `encode`…).
    func count(_ stage: String) -> Int {
        (try? metrics.expectTimer("test_\(stage)_seconds").values.count) ?? 0
    }

    func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Int64 {
        metrics.counterTotal(label: "test_\(name)", dimensions: dimensions)
    }

    /// Waits (up to 10 s) until a file of at least `bytes` bytes is under `folder` (a cache level's directory): the
    /// disk level is written in the background.
    static func waitForStoredFile(of bytes: Int, in folder: URL) async throws {
        for _ in 0..<200 {
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
            while let file = files?.nextObject() as? URL {
                if let size = try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize, size >= bytes { return }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("no stored file of \(bytes) bytes under \(folder.path)")
    }
}

/// Images the tests serve.
enum ServiceImages {
    /// A PNG of one colour, `width` × `height`.
    static func png(width: Int, height: Int, colour: UInt8 = 200) throws -> [UInt8] {
        let bytes = [UInt8](repeating: colour, count: width * height * 3)
        let image = Image(pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes))
        return Array(try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions()))
    }

    /// The size of an answer's image.
    static func size(_ response: ImageServiceResponse) throws -> (Int, Int) {
        let image = try PNGCoder.shared.decode(response.body, options: ImageDecodeOptions())
        return (image.width, image.height)
    }
}
