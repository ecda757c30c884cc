import Foundation
import ImageCore
import ImageTestSupport
import MetricsTestKit
import Testing

@testable import RedisCache

/// An entry larger than this reader's `maxEntryBytes` (another replica's, configured larger) is a miss here; it
/// never reaches the reply decoder whole, so it can't close the connection under the commands pipelined with it
/// or open the breaker (issue 21, item 4).
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct RedisOversizeEntryTests {
    @Test func anEntryOverThisReadersCapIsAMissAndTheTierStaysUp() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let prefix = "oversize-\(UUID().uuidString.prefix(8)):"
        let writer = RedisCache(
            configuration: try RedisCacheTesting.configuration(server.url) {
                $0.keyPrefix = prefix
                $0.maxEntryBytes = 8 << 20
            })
        let metrics = TestMetrics()
        let reader = RedisCache(
            configuration: try RedisCacheTesting.configuration(server.url) {
                $0.keyPrefix = prefix
                $0.maxEntryBytes = 64 << 10
                $0.metricsFactory = metrics
                $0.connectionsPerServer = 1  // every read shares the connection the large reply would land on
            })
        defer {
            writer.shutdown()
            reader.shutdown()
        }
        let large = Data(repeating: 7, count: 3 << 20)
        try await writer.store(nil, data: large, forKey: "large", cacheType: .disk)
        let small = RedisCacheTesting.image(5)
        try await writer.store(nil, data: small, forKey: "small", cacheType: .disk)

        let answers = await withTaskGroup(of: (String, Data?).self) { group in
            group.addTask { ("large", try? await reader.queryImage(forKey: "large", cacheType: .disk)?.data) }
            for _ in 0..<8 {
                group.addTask { ("small", try? await reader.queryImage(forKey: "small", cacheType: .disk)?.data) }
            }
            var answers: [(String, Data?)] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.filter { $0.0 == "small" }.allSatisfy { $0.1 == small }, "8 of 8 reads of another key hit")
        #expect(answers.first { $0.0 == "large" }?.1 == nil, "over this reader's cap: a miss")
        #expect(reader.isAvailable)
        #expect(metrics.counterTotal(label: "webimage_redis_oversize_total") >= 1)
        #expect(metrics.counterTotal(label: "webimage_redis_errors_total") == 0)
        // The writer, configured larger, still reads it.
        #expect(try await writer.queryImage(forKey: "large", cacheType: .disk)?.data == large)
    }

    @Test func theLargestEntryLimitDoesNotOverflow() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let cache = RedisCache(
            configuration: try RedisCacheTesting.configuration(server.url) { $0.maxEntryBytes = .max })
        defer { cache.shutdown() }
        let data = RedisCacheTesting.image(9)
        try await cache.store(nil, data: data, forKey: "k", cacheType: .disk)
        #expect(try await cache.queryImage(forKey: "k", cacheType: .disk)?.data == data)
    }
}
