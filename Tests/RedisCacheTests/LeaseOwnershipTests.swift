import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import Testing

@testable import RedisCache

/// Issue 32, defect 9: a fleet lease is a value someone owns. Only a claiming query takes one, its caller owns it on
/// a miss, and a composite that answers a hit ends what its lower levels took. Each case left a lease with no owner
/// on c19952b, and the other replica waited out `maxWait` (8 s here) instead of fetching at once.
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct LeaseOwnershipTests {
    static let clock: @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Loads `url` on a second replica that fetches it itself and returns how long that took.
    static func otherReplicaWait(_ server: RedisServerProcess, prefix: String, url: URL) async throws -> Double {
        let loader = ScriptedLoader()
        loader.set(.data(TestCoder.data(width: 5, height: 5), ResponseMetadata(url: url, statusCode: 200)), for: url)
        let redis = try LeaseLifecycleTests.replica(server, prefix: prefix)
        defer { redis.shutdown() }
        let start = clock()
        let loaded = try await LeaseLifecycleTests.manager(redis, loader).loadImage(with: url)
        #expect(loaded.image.width == 5)
        return clock() - start
    }

    @Test("a revalidation after a memory hit leaves no lease, whatever the origin answers", arguments: [304, 500])
    func revalidationAfterAMemoryHit(status: Int) async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let prefix = "own-\(UUID().uuidString.prefix(8)):"
        let url = URL(string: "test://host/reval-\(UUID().uuidString).timg")!
        let redis = try LeaseLifecycleTests.replica(server, prefix: prefix)
        defer { redis.shutdown() }
        let memory = MemoryCache()
        let loader = ScriptedLoader()
        let answer: ImageError =
            status == 304 ? ImageError(.cacheNotModified, stage: .download) : .invalidDownloadStatusCode(500)
        loader.set(.failure(answer), for: url)
        let manager = ImageManager(
            cache: CachesManager([memory, redis]), loader: loader, coders: CodersManager(coders: [TestCoder()]))
        manager.logHandler = { _ in }
        // In this replica's memory only (another level evicted, Redis never had it).
        memory.store(
            try TestCoder().decode(TestCoder.data(width: 5, height: 5), options: ImageDecodeOptions()), data: nil,
            metadata: nil, forKey: url.absoluteString, cacheType: .memory, completion: nil)
        _ = try? await manager.loadImage(with: url, options: .refreshCached)
        #expect(loader.requestCount == 1)
        #expect(redis.heldLeases.withLock { $0.isEmpty }, "the replica holds no lease after its revalidation")
        let waited = try await Self.otherReplicaWait(server, prefix: prefix, url: url)
        #expect(waited < LeaseLifecycleTests.slack, "the other replica waited \(waited) s for a lease nobody owned")
    }

    @Test("reading the original's bytes below a memory hit of the decoded original leaves no lease")
    func originalBytesBelowAMemoryHit() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let prefix = "own-\(UUID().uuidString.prefix(8)):"
        let url = URL(string: "test://host/orig-\(UUID().uuidString).timg")!
        let redis = try LeaseLifecycleTests.replica(server, prefix: prefix)
        defer { redis.shutdown() }
        let memory = MemoryCache()
        let loader = ScriptedLoader()
        loader.set(.failure(.invalidDownloadStatusCode(500)), for: url)
        let manager = ImageManager(
            cache: CachesManager([memory, redis]), loader: loader, coders: CodersManager(coders: [TestCoder()]))
        manager.logHandler = { _ in }
        memory.store(
            try TestCoder().decode(TestCoder.data(width: 5, height: 5), options: ImageDecodeOptions()), data: nil,
            metadata: nil, forKey: url.absoluteString, cacheType: .memory, completion: nil)
        // A coder option acts inside the decoder: the decoded original can't serve, its bytes are asked for.
        var context = ImageContext()
        context[coderOption: TestCoder.Tint.self] = 0x0F
        _ = try? await manager.loadImage(with: url, context: context)
        for _ in 0..<100 where !redis.heldLeases.withLock({ $0.isEmpty }) {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(redis.heldLeases.withLock { $0.isEmpty })
        let waited = try await Self.otherReplicaWait(server, prefix: prefix, url: url)
        #expect(waited < LeaseLifecycleTests.slack, "the other replica waited \(waited) s for a lease nobody owned")
    }

    @Test("a bare queryImage miss takes no lease; a claiming one does, and its owner ends it")
    func onlyAClaimingQueryTakesALease() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let prefix = "own-\(UUID().uuidString.prefix(8)):"
        let url = URL(string: "test://host/bare-\(UUID().uuidString).timg")!
        let redis = try LeaseLifecycleTests.replica(server, prefix: prefix)
        defer { redis.shutdown() }
        #expect(try await redis.queryImage(forKey: url.absoluteString, cacheType: .disk) == nil)
        #expect(redis.heldLeases.withLock { $0.isEmpty })
        let waited = try await Self.otherReplicaWait(server, prefix: prefix, url: url)
        #expect(waited < LeaseLifecycleTests.slack, "the other replica waited \(waited) s after a bare query")

        let claimed = URL(string: "test://host/claimed-\(UUID().uuidString).timg")!
        #expect(try await redis.queryImageClaimingMiss(forKey: claimed.absoluteString, cacheType: .disk) == nil)
        let lease = RedisKeys(prefix: prefix, key: claimed.absoluteString).lease
        #expect(redis.heldLeases.withLock { $0.contains(lease) }, "the claiming miss holds the lease")
        redis.missEnded(forKey: claimed.absoluteString, cacheType: .disk, outcome: .abandoned)
        for _ in 0..<100 where !redis.heldLeases.withLock({ $0.isEmpty }) {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(redis.heldLeases.withLock { $0.isEmpty }, "its owner ended it")
    }
}
