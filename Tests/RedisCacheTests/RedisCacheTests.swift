import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import Metrics
import MetricsTestKit
import NIOCore
import Testing

@testable import DiskCache
@testable import RedisCache

/// Helpers shared by the cache-level suites.
enum RedisCacheTesting {
    static func configuration(
        _ url: String, _ adjust: (inout RedisCacheConfiguration) -> Void = { _ in }
    ) throws -> RedisCacheConfiguration {
        var configuration = try RedisCacheConfiguration(url: url)
        configuration.keyPrefix = "test-\(UUID().uuidString.prefix(8)):"
        // Generous: these tests check what is stored and answered, on a shared 2-core machine where every suite
        // runs at once; the degrade tests set their own timeouts.
        configuration.commandTimeout = 10
        configuration.connectTimeout = 10
        adjust(&configuration)
        return configuration
    }

    static func image(_ seed: UInt8, width: Int = 16, height: Int = 12) -> Data {
        TestCoder.data(width: width, height: height, colors: [RGBAColor(red: seed, green: 2, blue: 3, alpha: 255)])
    }

    /// A manager over memory + `redis`, loading through `loader`, decoding the test format with its own coders (a coder named in a load's context would be a key
    /// part, and make every load a derived key with its own original).
    static func manager(redis: RedisCache, loader: ScriptedLoader) -> ImageManager {
        ImageManager(cache: CachesManager([MemoryCache(), redis]), loader: loader, coders: coders)
    }

    static let coders = CodersManager(coders: [TestCoder()])

    static func context() -> ImageContext { ImageContext() }

    static func counter(_ metrics: TestMetrics, _ label: String, _ dimensions: [(String, String)]? = nil) -> Int64 {
        dimensions.map { metrics.counterTotal(label: label, dimensions: $0) } ?? metrics.counterTotal(label: label)
    }
}

/// The cache level against a real single `redis-server`.
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct RedisCacheTests {
    @Test func storesQueriesRemovesAndClearsOnlyItsPrefix() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let metrics = TestMetrics()
        let configuration = try RedisCacheTesting.configuration(server.url) {
            $0.metricsFactory = metrics
            $0.entryTTL = 3600
        }
        let cache = RedisCache(configuration: configuration)
        defer { cache.shutdown() }
        let bytes = RedisCacheTesting.image(7)
        let metadata = CacheEntryMetadata(contentType: "image/x-test", etag: "\"abc\"", lastModified: "yesterday")

        #expect(try await cache.queryImage(forKey: "https://h/a.png") == nil)
        try await cache.store(nil, data: bytes, metadata: metadata, forKey: "https://h/a.png", cacheType: .all)
        let hit = try #require(try await cache.queryImage(forKey: "https://h/a.png"))
        #expect(hit.data == bytes && hit.image == nil && hit.cacheType == .disk)
        #expect(hit.metadata?.etag == "\"abc\"" && hit.metadata?.contentType == "image/x-test")
        #expect(hit.metadata?.originalKey == "https://h/a.png" && hit.metadata?.size == bytes.count)
        // It is a bytes level: memory-only calls pass it by.
        #expect(try await cache.queryImage(forKey: "https://h/a.png", cacheType: .memory) == nil)
        try await cache.store(nil, data: bytes, forKey: "memory-only", cacheType: .memory)
        #expect(await cache.containsImage(forKey: "memory-only") == .none)
        #expect(await cache.containsImage(forKey: "https://h/a.png") == .disk)

        // Hashed keys with the prefix, and the TTL set.
        let keys = RedisKeys(prefix: configuration.keyPrefix, key: "https://h/a.png")
        #expect(keys.entry.hasPrefix(configuration.keyPrefix) && !keys.entry.contains("h/a.png"))
        let ttl = Int(try await server.cli(["PTTL", keys.entry]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(ttl > 3_500_000 && ttl <= 3_600_000)

        await cache.removeImage(forKey: "https://h/a.png")
        #expect(try await cache.queryImage(forKey: "https://h/a.png") == nil)

        for index in 0..<30 { try await cache.store(nil, data: bytes, forKey: "k\(index)", cacheType: .disk) }
        _ = try await server.cli(["SET", "someone-else", "x"])
        await cache.clear()
        #expect(try await server.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try await server.cli(["GET", "someone-else"]).contains("x"))

        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_hits_total") == 1)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_misses_total") == 2)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_stores_total") == 31)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_bytes_read_total") > Int64(bytes.count))
    }

    @Test func oversizeCorruptAndForeignEntriesAreMisses() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let metrics = TestMetrics()
        let configuration = try RedisCacheTesting.configuration(server.url) {
            $0.metricsFactory = metrics
            $0.maxEntryBytes = 4096
        }
        let cache = RedisCache(configuration: configuration)
        defer { cache.shutdown() }
        try await cache.store(nil, data: Data(count: 5000), forKey: "big", cacheType: .disk)
        #expect(try await cache.queryImage(forKey: "big") == nil)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_oversize_total") == 1)

        // Garbage under the entry's key, and an entry written for another key.
        let garbage = RedisKeys(prefix: configuration.keyPrefix, key: "garbage")
        _ = try await server.cli(["SET", garbage.entry, "WIRC\u{1}not json"])
        #expect(try await cache.queryImage(forKey: "garbage") == nil)
        let foreign = RedisEntryCodec.encode(data: Data([1, 2, 3]), metadata: CacheEntryMetadata(originalKey: "other"))
        _ = await cache.guarded("test") { () async throws(RedisClientError) in
            try await cache.executor.send(
                [.set(RedisKeys(prefix: configuration.keyPrefix, key: "mine").entry, foreign, milliseconds: nil)],
                routingKey: nil)
        }
        #expect(try await cache.queryImage(forKey: "mine") == nil)
        #expect(RedisCacheTesting.counter(metrics, "webimage_redis_errors_total", [("kind", "corrupt")]) == 2)
        #expect(cache.isAvailable, "bad entries are not Redis failures")
    }

    /// Two managers (two replicas) sharing Redis: a thumbnail made by the first is served to the second with no
    /// loader request and no transform, and hits are copied to the local disk level.
    @Test func replicasShareOriginalsAndTransformedResults() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let configuration = try RedisCacheTesting.configuration(server.url)
        let url = URL(string: "test://origin/photo.timg")!
        let transformer = TestTransformer(width: 4, height: 3)

        let loaderA = ScriptedLoader()
        loaderA.set(
            .data(RedisCacheTesting.image(9, width: 40, height: 30), ResponseMetadata(etag: "\"v1\"")), for: url)
        let redisA = RedisCache(configuration: configuration)
        defer { redisA.shutdown() }
        let managerA = RedisCacheTesting.manager(redis: redisA, loader: loaderA)
        var context = RedisCacheTesting.context()
        context.imageTransformer = transformer
        let first = try await managerA.loadImage(with: url, options: [.waitStoreCache], context: context)
        #expect(first.image.width == 4 && first.cacheType == .none)
        #expect(loaderA.requestCount == 1)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-promote-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(configuration: DiskCacheConfiguration(directory: directory))
        let loaderB = ScriptedLoader()
        let redisB = RedisCache(configuration: configuration, promotingHitsTo: disk)
        defer { redisB.shutdown() }
        let managerB = ImageManager(
            cache: CachesManager([MemoryCache(), disk, redisB]), loader: loaderB, coders: RedisCacheTesting.coders)
        let transformerB = TestTransformer(width: 4, height: 3)
        var contextB = RedisCacheTesting.context()
        contextB.imageTransformer = transformerB
        let second = try await managerB.loadImage(with: url, context: contextB)
        #expect(second.image.width == 4 && second.image.height == 3)
        #expect(second.cacheType == .disk)
        #expect(loaderB.requestCount == 0, "the second replica must not reach the origin")
        #expect(transformerB.callCount == 0, "the stored thumbnail is used as it is")

        // The original is shared too: an untransformed load on B also needs no request.
        let original = try await managerB.loadImage(with: url, context: RedisCacheTesting.context())
        #expect(original.image.width == 40 && loaderB.requestCount == 0)

        // The hit was copied to B's local disk level.
        let key = managerB.cacheKey(for: url, context: contextB) ?? ""
        var promoted = false
        for _ in 0..<200 where !promoted {
            promoted = await disk.containsImage(forKey: key, cacheType: .disk) == .disk
            if !promoted { try await Task.sleep(nanoseconds: 10_000_000) }
        }
        #expect(promoted)
    }
}
