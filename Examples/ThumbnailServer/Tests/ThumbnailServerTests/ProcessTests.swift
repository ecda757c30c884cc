import Foundation
import Hummingbird
import HummingbirdTesting
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

/// Real `thumbnail-server` processes: graceful shutdown on SIGTERM, two replicas sharing one `redis-server`, and
/// the gallery in a real browser.
@Suite(.serialized) struct ProcessTests {
    /// Starts the built server with `environment` (unsigned, the origin's address allowed, metrics on a free
    /// port); returns the process, its port and its metrics port once `/health` answers.
    static func startServer(
        in directory: URL, name: String, environment: [String: String] = [:], arguments: [String] = []
    ) async throws -> (External.Daemon, port: Int, metricsPort: Int) {
        let port = try await External.freePort()
        let metricsPort = try await External.freePort()
        let daemon = try External.Daemon(
            External.serverExecutable, arguments,
            environment: [
                "PORT": String(port), "METRICS_PORT": String(metricsPort), "ALLOW_UNSIGNED": "1",
                "ALLOWED_ADDRESSES": "127.0.0.1/32", "CACHE_DIR": directory.appendingPathComponent(name).path,
                "LOG_LEVEL": "info",
            ].merging(environment) { $1 },
            log: directory.appendingPathComponent("\(name).log"))
        for _ in 0..<600 {
            if let reply = try? await Live.get("http://127.0.0.1:\(port)/health"), reply.status == 200 {
                return (daemon, port, metricsPort)
            }
            guard daemon.process.isRunning else {
                throw External.Failure("server exited: \(daemon.output.suffix(1500))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        daemon.stop()
        throw External.Failure("server did not answer: \(daemon.output.suffix(1500))")
    }

    static func metric(_ name: String, _ labels: [String: String] = [:], port: Int) async throws -> Int {
        let text = try await Live.get("http://127.0.0.1:\(port)/metrics").text
        return Int(ServerMetrics.value(name, labels, in: text) ?? 0)
    }

    /// SIGTERM with requests in flight: `/ready` turns 503 during the drain, every request in flight completes
    /// with its thumbnail, and the process exits 0.
    @Test func sigtermDrainsRequestsInFlight() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drain-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = TestOrigin()
        for index in 0..<8 {
            origin.set("/slow\(index).jpg", .init(data: try TestImages.jpeg(width: 200, height: 100), delay: 1.0))
        }
        try await Live.withOrigin(origin) { originBase, _ in
            let (server, port, _) = try await Self.startServer(
                in: directory, name: "drain", environment: ["DRAIN_SECONDS": "0.5", "WORKERS": "8"])
            defer { server.stop() }
            let base = "http://127.0.0.1:\(port)"
            async let replies = withThrowingTaskGroup(of: Live.Reply.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await Live.get(base + Live.thumbnailPath(source: originBase + "/slow\(index).jpg", "w=50"))
                    }
                }
                return try await group.reduce(into: [Live.Reply]()) { $0.append($1) }
            }
            // Every request has reached the origin (so it is in flight), then SIGTERM.
            for _ in 0..<200 where origin.totalHits < 8 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(origin.totalHits == 8)
            kill(server.process.processIdentifier, SIGTERM)
            try await Task.sleep(for: .milliseconds(150))
            let ready = try await Live.get(base + "/ready")
            #expect(ready.status == 503, "ready during the drain: \(ready.status)")
            let done = try await replies
            #expect(done.map(\.status) == Array(repeating: 200, count: 8), "\(done.map(\.status))")
            #expect(try done.allSatisfy { try $0.image().width == 50 })
            for _ in 0..<200 where server.process.isRunning { try await Task.sleep(for: .milliseconds(25)) }
            #expect(!server.process.isRunning, "still running after the drain: \(server.output.suffix(800))")
            #expect(server.process.terminationStatus == 0, "\(server.output.suffix(800))")
            #expect(server.output.contains("\"request_id\""), "structured request logs")
        }
    }

    /// Replica B serves a thumbnail replica A made, from Redis, with no origin request; bursts at both make one
    /// origin request each (JPEG, GIF, WebP), and a 404 or `no-store` source never leaves a request waiting on a lease.
    @Test(.enabled(if: External.redisTestsRun, "redis-server not installed (apt-get install redis-server)"))
    func secondReplicaServesTheFirstOnesThumbnailFromRedis() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (redis, redisPort) = try await External.startRedis(in: directory)
        defer { redis.stop() }
        let spinner = try GIFCoder.shared.encode(
            SampleImages.spinner(width: 160, height: 100, frames: 3), as: .gif, options: ImageEncodeOptions())
        let banner = try WebPCoder.shared.encode(
            SampleImages.landscape(width: 600, height: 200), as: .webp, options: ImageEncodeOptions())
        let origin = TestOrigin([
            "/photo.jpg": .init(data: try TestImages.jpeg()),
            "/burst.jpg": .init(data: try TestImages.jpeg(width: 640, height: 400), delay: 0.3),
            "/burst.gif": .init(data: spinner, contentType: "image/gif", delay: 0.3),
            "/burst.webp": .init(data: banner, contentType: "image/webp", delay: 0.3),
            "/sizes.jpg": .init(data: try TestImages.jpeg(width: 640, height: 400), delay: 0.3),
            "/gone.jpg": .init(status: 404, delay: 0.3),
            "/private.jpg": .init(
                data: try TestImages.jpeg(width: 320, height: 200), headers: ["Cache-Control": "no-store"], delay: 0.3),
        ])
        try await Live.withOrigin(origin) { originBase, _ in
            var replicas: [(External.Daemon, Int, Int)] = []
            defer { for (daemon, _, _) in replicas { daemon.stop() } }
            for name in ["a", "b"] {
                replicas.append(
                    try await Self.startServer(
                        in: directory, name: name, arguments: ["--redis", "redis://127.0.0.1:\(redisPort)"]))
            }
            let (a, b) = (replicas[0], replicas[1])
            let path = Live.thumbnailPath(source: originBase + "/photo.jpg", "w=120&h=90&fit=cover")
            let fromA = try await Live.get("http://127.0.0.1:\(a.1)\(path)")
            let fromB = try await Live.get("http://127.0.0.1:\(b.1)\(path)")
            #expect(fromA.body == fromB.body)
            #expect(try fromB.image().width == 120)
            #expect(origin.hits("/photo.jpg") == 1)
            let redisHits = try await Self.metric(
                "thumbnail_cache_hits_total", ["kind": "result", "level": "redis"], port: b.2)
            let decodesOnB = try await Self.metric("thumbnail_decode_seconds_count", port: b.2)
            #expect(redisHits == 1 && decodesOnB == 0)

            // Cold bursts at both replicas, five requests each: one origin request for the fleet per burst of
            // JPEG, GIF and WebP thumbnails; a 404 and a `no-store` source end the lease at once (the not-stored
            // mark), so no request waits for the lease to expire (10 s): every answer comes well within that. In
            // the `w=*` burst every request asks another size (ten result keys): the source's own lease (the
            // manager's kept data load) still makes one origin request for the fleet.
            for (source, query, status, maxOriginRequests) in [
                ("/burst.jpg", "w=100", 200, 1), ("/burst.gif", "w=100&format=gif", 200, 1),
                ("/burst.webp", "w=100&format=webp", 200, 1), ("/gone.jpg", "w=100", 404, 2),
                ("/private.jpg", "w=100", 200, 2), ("/sizes.jpg", "w=*", 200, 1),
            ] {
                let start = ContinuousClock.now
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<10 {
                        let port = index % 2 == 0 ? a.1 : b.1
                        let sized = query.replacingOccurrences(of: "*", with: String(60 + 8 * index))
                        let burst = Live.thumbnailPath(source: originBase + source, sized)
                        group.addTask { try await Live.get("http://127.0.0.1:\(port)\(burst)").status }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                let elapsed = ContinuousClock.now - start
                #expect(statuses == Array(repeating: status, count: 10), "\(source): \(statuses)")
                #expect(
                    origin.hits(source) >= 1 && origin.hits(source) <= maxOriginRequests,
                    "\(source): \(origin.hits(source))")
                #expect(elapsed < .seconds(8), "\(source): a request waited on a lease (\(elapsed))")
            }
        }
        let keys = try await External.run(
            External.redisCLI, ["-p", String(redisPort), "--scan", "--pattern", "thumbnail-server:*"])
        #expect(keys.output.split(separator: "\n").count >= 4, "sources and results are both in Redis")
    }

    /// Headless Chromium opens the gallery: every `<img>` ends with pixels, and a screenshot is kept under
    /// `.build/test-artifacts/`.
    @Test(.enabled(if: External.browserTestsRun, "chromium not installed (apt-get install chromium)"))
    func galleryRendersInHeadlessChromium() async throws {
        guard FileManager.default.isExecutableFile(atPath: External.chromium) else {
            throw External.Failure("REQUIRE_CHROMIUM=1 but \(External.chromium) is missing: apt-get install chromium")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gallery-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Signed: the gallery signs its own links.
        try await Live.withServer({
            $0.allowUnsigned = false
            $0.signingKeys = ["00112233445566778899aabbccddeeff"]
            $0.servesSamples = true
        }) { _, base in
            let page = base + "/"
            let browser = [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--user-data-dir=\(directory.appendingPathComponent("profile").path)", "--virtual-time-budget=20000",
            ]
            let dom = try await External.run(External.chromium, browser + ["--dump-dom", page])
            #expect(dom.status == 0, "\(dom.output.suffix(1000))")
            let images = Self.attribute("data-images", in: dom.output)
            let broken = Self.attribute("data-broken", in: dom.output)
            #expect(images == SampleImagesCount.expected * 3, "\(dom.output.prefix(400))")
            #expect(broken == 0, "images without pixels: \(broken ?? -1)")

            let artifacts = External.buildFolder.appendingPathComponent("test-artifacts")
            try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
            let screenshot = artifacts.appendingPathComponent("gallery.png")
            try? FileManager.default.removeItem(at: screenshot)
            let shot = try await External.run(
                External.chromium, browser + ["--window-size=1100,1500", "--screenshot=\(screenshot.path)", page])
            #expect(shot.status == 0, "\(shot.output.suffix(1000))")
            let png = try CodersManager.shared.decode(Data(contentsOf: screenshot), options: ImageDecodeOptions())
            #expect(png.width == 1100 && png.height == 1500)
            print("gallery screenshot: \(screenshot.path)")
        }
    }

    static func attribute(_ name: String, in html: String) -> Int? {
        guard let range = html.range(of: "\(name)=\"") else { return nil }
        return Int(html[range.upperBound...].prefix { $0.isNumber })
    }
}

/// How many samples the gallery shows (one row of three fits each).
enum SampleImagesCount {
    static var expected: Int { (try? SampleImages.make().count) ?? 0 }
}
