import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import WebImage

@testable import ThumbnailServerApp

/// Two `thumbnail-server` processes sharing one `redis-server`, and the gallery in a real browser.
@Suite struct FleetAndBrowserTests {
    static func loader() -> HTTPLoader {
        var configuration = HTTPLoaderConfiguration()
        configuration.retryConnectionEstablishment = false
        configuration.timeout = 10
        return HTTPLoader(configuration: configuration)
    }

    static func metric(_ name: String, in text: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }

    /// Replica B serves a thumbnail replica A made, from Redis, with no origin request.
    @Test(.enabled(if: External.redisTestsRun, "redis-server not installed (apt-get install redis-server)"))
    func secondReplicaServesTheFirstOnesThumbnailFromRedis() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (redis, redisPort) = try await External.startRedis(in: directory)
        defer { redis.stop() }

        var replicas: [(External.Daemon, Int)] = []
        defer { for (daemon, _) in replicas { daemon.stop() } }
        for name in ["a", "b"] {
            let port = try await External.freePort()
            let daemon = try External.Daemon(
                External.serverExecutable, ["--redis", "redis://127.0.0.1:\(redisPort)"],
                environment: ["PORT": String(port), "CACHE_DIR": directory.appendingPathComponent(name).path],
                log: directory.appendingPathComponent("\(name).log"))
            replicas.append((daemon, port))
        }
        for coder: any ImageCoder in [PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared] {
            CodersManager.shared.addCoder(coder)  // to check the thumbnails; the servers are other processes
        }
        let loader = Self.loader()
        defer { Task { try? await loader.shutdown() } }
        for (daemon, port) in replicas {
            try await External.waitUntilServing(
                URL(string: "http://127.0.0.1:\(port)/metrics")!, loader: loader, daemon: daemon)
        }
        let (portA, portB) = (replicas[0].1, replicas[1].1)
        let source = "http://127.0.0.1:\(portA)/samples/photo.jpg"
        let query = "url=\(source.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&w=120&h=90&fit=cover"

        let fromA = try await External.get(URL(string: "http://127.0.0.1:\(portA)/thumbnail?\(query)")!, loader: loader)
        let fromB = try await External.get(URL(string: "http://127.0.0.1:\(portB)/thumbnail?\(query)")!, loader: loader)
        for data in [fromA, fromB] {
            let image = try CodersManager.shared.decode(data, options: ImageDecodeOptions())
            #expect(image.width == 120 && image.height == 90)
        }
        let metricsA = String(
            decoding: try await External.get(URL(string: "http://127.0.0.1:\(portA)/metrics")!, loader: loader),
            as: UTF8.self)
        let metricsB = String(
            decoding: try await External.get(URL(string: "http://127.0.0.1:\(portB)/metrics")!, loader: loader),
            as: UTF8.self)
        // The origin (A's /samples) was asked once, by A; B found A's thumbnail in Redis.
        #expect(Self.metric("samples_served_total", in: metricsA) == 1, "\(metricsA)")
        #expect(Self.metric("samples_served_total", in: metricsB) == 0)
        #expect(Self.metric("thumbnail_cache_misses_total", in: metricsA) == 1)
        #expect(Self.metric("thumbnail_cache_hits_total", in: metricsB) == 1, "\(metricsB)")
        let keys = try await External.run(
            External.redisCLI, ["-p", String(redisPort), "--scan", "--pattern", "thumbnail-server:*"])
        #expect(keys.output.split(separator: "\n").count >= 2, "the original and the thumbnail are both in Redis")
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
        var configuration = ThumbnailServerConfiguration()
        configuration.port = 0
        configuration.cacheDirectory = directory.appendingPathComponent("cache")
        let app = try await buildApplication(configuration)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let page = "http://127.0.0.1:\(port)/"
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
