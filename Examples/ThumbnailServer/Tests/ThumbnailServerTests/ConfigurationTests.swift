import Foundation
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

/// The server's settings come from the environment and a JSON file; the service's part of them lives in one
/// ``ImageServiceConfiguration``, declared once.
@Suite struct ConfigurationTests {
    @Test("settings read from the environment land in the service configuration the server runs")
    func environmentReachesTheService() throws {
        let loaded = try ThumbnailServerConfiguration.load(
            environment: [
                "WORKERS": "3", "QUEUE_LIMIT": "7", "MAX_SIDE": "900", "QUALITY": "jpeg=70,avif=40",
                "EFFORT": "avif=fast,png=best",
                "PERCEPTUAL_DISTANCE": "jpeg=2.5,webp=4", "SOURCE_MIN_TTL": "5", "REQUEST_TIMEOUT": "4",
                "ALLOWED_HOSTS": "a.example, b.example", "REDIS_KEY_PREFIX": "x:", "PORT": "0", "IDLE_TIMEOUT": "2",
                "SEND_BUFFER_KB": "64", "LISTEN_BACKLOG": "1000", "HUGE_PAGES": "0",
                "TRACES_ENDPOINT": "http://collector:4318/v1/traces",
            ], arguments: ["test"])
        let service = loaded.service
        #expect(service.workers == 3 && service.queueLimit == 7 && service.maxSide == 900)
        #expect(service.quality == [.jpeg: 70, .webp: 80, .avif: 40], "QUALITY changes only the formats it names")
        #expect(service.perceptualDistance == [.jpeg: 2.5, .webp: 4, .avif: 2.0])
        #expect(service.effort == [.avif: .fast, .png: .best], "EFFORT changes only the formats it names")
        #expect(service.freshness.minimumTTL == 5 && service.requestTimeout == 4)
        #expect(service.allowedHosts == ["a.example", "b.example"] && service.redisKeyPrefix == "x:")
        // The server's own settings stay the server's.
        #expect(loaded.port == 0 && loaded.connectionLimits.idleTimeout == 2)
        #expect(loaded.connectionLimits.sendBufferBytes == 64 << 10 && loaded.connectionLimits.listenBacklog == 1000)
        #expect(!loaded.usesHugePages && ThumbnailServerConfiguration().usesHugePages)
        #expect(ThumbnailServerConfiguration().connectionLimits.sendBufferBytes == 256 << 10)
        let autotuned = try ThumbnailServerConfiguration.load(environment: ["SEND_BUFFER_KB": "0"], arguments: ["t"])
        #expect(autotuned.connectionLimits.sendBufferBytes == nil, "0 leaves the send buffer to the kernel")
        #expect(loaded.tracesEndpoint == "http://collector:4318/v1/traces")
        // Read and written through the server's configuration as if they were its own.
        var configuration = loaded
        configuration.workers = 5
        #expect(configuration.service.workers == 5 && configuration.maxSide == 900)
    }

    @Test("the server's defaults are the service's, except its Redis key and metric names")
    func defaultsAreTheServices() {
        let server = ThumbnailServerConfiguration().service, plain = ImageServiceConfiguration()
        #expect(server.redisKeyPrefix == "thumbnail-server:" && server.metricsPrefix == "thumbnail")
        #expect(server.workers == plain.workers && server.queueLimit == plain.queueLimit)
        #expect(server.quality == plain.quality && server.perceptualDistance == plain.perceptualDistance)
        #expect(server.effort == plain.effort && plain.effort == [.avif: .balanced])
        #expect(server.maxSourceBytes == plain.maxSourceBytes && server.maxSide == plain.maxSide)
        #expect(server.requestTimeout == plain.requestTimeout && server.originTimeout == plain.originTimeout)
    }

    @Test("a bad value or an unknown file key is an error that names the setting")
    func badValuesNameTheSetting() throws {
        for (name, value) in [
            ("PERCEPTUAL_DISTANCE", "jpeg=0"), ("PERCEPTUAL_DISTANCE", "gif=3"), ("QUALITY", "png=80"),
            ("EFFORT", "avif=slow"), ("EFFORT", "bmp=fast"),
            ("WORKERS", "0"), ("MAX_SIDE", "big"),
        ] {
            let error = #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
                _ = try ThumbnailServerConfiguration.load(environment: [name: value], arguments: ["test"])
            }
            #expect(error?.message.hasPrefix(name) == true, "\(error?.message ?? "")")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"workers": 2, "perceptualDistance": {"avif": 1.5}, "nope": 1}"#.utf8).write(to: file)
        let unknown = #expect(throws: ConfigurationError.self) {
            _ = try ThumbnailServerConfiguration.load(environment: [:], arguments: ["test", "--config", file.path])
        }
        #expect(unknown?.message.contains("nope") == true)
        try Data(#"{"workers": 2, "perceptualDistance": {"avif": 1.5}}"#.utf8).write(to: file)
        let loaded = try ThumbnailServerConfiguration.load(
            environment: [:], arguments: ["test", "--config", file.path])
        #expect(loaded.workers == 2 && loaded.perceptualDistance[.avif] == 1.5)
    }
}
