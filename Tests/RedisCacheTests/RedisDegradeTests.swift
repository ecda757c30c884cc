import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import MetricsTestKit
import Testing

@testable import RedisCache

/// Redis down, answering errors, or never answering: every load still succeeds from the loader, errors go to
/// metrics, and the breaker stops the calls.
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct RedisDegradeTests {
    static func loader() -> ScriptedLoader {
        let loader = ScriptedLoader()
        loader.setDefault(.data(RedisCacheTesting.image(5), ResponseMetadata()))
        return loader
    }

    static func load(_ manager: ImageManager, _ name: String) async throws -> ImageResult {
        try await manager.loadImage(
            with: URL(string: "test://origin/\(name).timg")!, options: [.waitStoreCache],
            context: RedisCacheTesting.context())
    }

    @Test func stoppingAndRestartingRedisMidRunNeverFailsALoad() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let metrics = TestMetrics()
        let configuration = try RedisCacheTesting.configuration(server.url) {
            $0.metricsFactory = metrics
            // Generous (a shared CI machine), and free: with the server stopped, connects fail at once.
            $0.commandTimeout = 5
            $0.breakerFailureThreshold = 3
            $0.breakerBackoff = (base: 0.02, maximum: 0.1)
            $0.reconnectBackoff = (base: 0.01, maximum: 0.05)
        }
        let redis = RedisCache(configuration: configuration)
        defer { redis.shutdown() }
        let loader = Self.loader()
        let manager = RedisCacheTesting.manager(redis: redis, loader: loader)

        for index in 0..<10 { _ = try await Self.load(manager, "before-\(index)") }
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_stores_total") == 10)

        server.stop()
        for index in 0..<30 {
            let result = try await Self.load(manager, "during-\(index)")
            #expect(result.image.width == 16)
        }
        // A new replica (empty memory) whose Redis is down still loads what Redis had, from the origin.
        let fresh = RedisCacheTesting.manager(redis: redis, loader: loader)
        _ = try await Self.load(fresh, "before-0")
        #expect(loader.requestCount == 41)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_breaker_opened_total") >= 1)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_skipped_total") > 0)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_errors_total") >= 3)
        #expect(!redis.isAvailable)

        try await server.restart()
        // Traffic drives the probes; once one answers the breaker closes and stores reach Redis again.
        var index = 0
        while !redis.isAvailable && index < 500 {
            _ = try await Self.load(manager, "probe-\(index)")
            index += 1
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(redis.isAvailable)
        _ = try await Self.load(manager, "after")
        let key = manager.cacheKey(for: URL(string: "test://origin/after.timg")!) ?? ""
        let entry = RedisKeys(prefix: configuration.keyPrefix, key: key).entry
        #expect(try await server.cli(["EXISTS", entry]).contains("1"))
    }

    /// A Redis out of memory refuses writes (`OOM`) and still answers reads: stores are skipped and counted,
    /// loads succeed, and reads keep the breaker closed.
    @Test func outOfMemoryRepliesDegradeToTheLoader() async throws {
        let server = try await RedisServerProcess.start(["--maxmemory", "1", "--maxmemory-policy", "noeviction"])
        defer { server.destroy() }
        let metrics = TestMetrics()
        let configuration = try RedisCacheTesting.configuration(server.url) {
            $0.metricsFactory = metrics
            $0.breakerFailureThreshold = 3
        }
        let redis = RedisCache(configuration: configuration)
        defer { redis.shutdown() }
        let loader = Self.loader()
        let manager = RedisCacheTesting.manager(redis: redis, loader: loader)
        for index in 0..<10 { _ = try await Self.load(manager, "oom-\(index)") }
        #expect(loader.requestCount == 10)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_errors_total", [("kind", "server")]) == 10)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_stores_total") == 0)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_misses_total") == 10)
        #expect(redis.isAvailable)
    }

    /// The only mock the Redis tests use: a TCP server that accepts and never answers.
    @Test func aServerThatNeverAnswersCostsAtMostTheThresholdOfTimeouts() async throws {
        let silent = try await SilentServer.start()
        defer { Task { await silent.stop() } }
        let metrics = TestMetrics()
        let configuration = try RedisCacheTesting.configuration("redis://127.0.0.1:\(silent.port)") {
            $0.metricsFactory = metrics
            $0.commandTimeout = 0.1
            $0.connectTimeout = 0.2
            $0.breakerFailureThreshold = 3
            $0.breakerBackoff = (base: 60, maximum: 60)
        }
        let redis = RedisCache(configuration: configuration)
        defer { redis.shutdown() }
        let loader = Self.loader()
        let manager = RedisCacheTesting.manager(redis: redis, loader: loader)
        for index in 0..<20 {
            let result = try await Self.load(manager, "silent-\(index)")
            #expect(result.image.width == 16)
        }
        #expect(loader.requestCount == 20)
        // Three failed calls opened the breaker; everything after was skipped without touching the socket.
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_errors_total") == 3)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_breaker_opened_total") == 1)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_skipped_total") >= 30)
    }
}
