import Foundation
import HTTPLoader
import ImageCore
import ImageTestSupport
import MemoryCache
import MetricsTestKit
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

@testable import RedisCache

/// Fleet-wide coalescing across separate OS processes: this test binary re-runs itself (`/proc/self/exe`) with
/// `REDIS_FLEET_WORKER` set, which enables the worker test in the child only. Each worker is a replica: its own
/// `ImageManager` over memory + Redis, loading over HTTP from an origin server in the parent.
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct FleetCoalescingTests {
    static let environment = ProcessInfo.processInfo.environment

    /// What a worker prints for the parent, one line.
    struct WorkerReport: Codable {
        var width: Int
        var red: Int
        var leases: Int64
        var waits: Int64
        var coalescedHits: Int64
        var hits: Int64
        var fallbacks: Int64
    }

    static func workerConfiguration(_ url: String, prefix: String, metrics: TestMetrics, leaseDuration: Double) throws
        -> RedisCacheConfiguration
    {
        var configuration = try RedisCacheConfiguration(url: url)
        configuration.keyPrefix = prefix
        configuration.commandTimeout = 10
        configuration.connectTimeout = 10
        configuration.metricsFactory = metrics
        configuration.fleetCoalescing = .init(leaseDuration: leaseDuration, maxWait: 20, pollInterval: 0.01...0.05)
        return configuration
    }

    @Test(
        "worker half of the fleet tests (runs only in a child process)",
        .enabled(if: environment["REDIS_FLEET_WORKER"] != nil))
    func fleetWorker() async throws {
        let redisURL = try #require(Self.environment["REDIS_FLEET_URL"])
        let origin = try #require(Self.environment["REDIS_FLEET_ORIGIN"].flatMap(URL.init(string:)))
        let prefix = try #require(Self.environment["REDIS_FLEET_PREFIX"])
        let barrier = Int(Self.environment["REDIS_FLEET_BARRIER"] ?? "0") ?? 0
        let metrics = TestMetrics()
        let redis = RedisCache(
            configuration: try Self.workerConfiguration(redisURL, prefix: prefix, metrics: metrics, leaseDuration: 10))
        defer { redis.shutdown() }
        let loader = HTTPLoader()
        let manager = ImageManager(
            cache: CachesManager([MemoryCache(), redis]), loader: loader, coders: RedisCacheTesting.coders)
        // Start together: every worker counts itself in, then waits for the others.
        if barrier > 0 {
            let ready = try await redis.executor.send([RedisCommand(["INCR", "\(prefix)ready"])], routingKey: nil)
            #expect(ready.first?.int != nil)
            var count: Int64 = 0
            for _ in 0..<2000 where count < barrier {
                count = try await redis.executor.send([.get("\(prefix)ready")], routingKey: nil).first?.int ?? 0
                if count < barrier { try await Task.sleep(nanoseconds: 2_000_000) }
            }
        }
        let result = try await manager.loadImage(
            with: origin, options: [.waitStoreCache], context: RedisCacheTesting.context())
        try await loader.shutdown()
        let report = WorkerReport(
            width: result.image.width, red: Int(result.image.pixels.bytes[0]),
            leases: metrics.counterTotal(label: "webimage_redis_leases_total"),
            waits: metrics.counterTotal(label: "webimage_redis_coalesced_waits_total"),
            coalescedHits: metrics.counterTotal(label: "webimage_redis_coalesced_hits_total"),
            hits: metrics.counterTotal(label: "webimage_redis_hits_total"),
            fallbacks: metrics.counterTotal(label: "webimage_redis_coalesce_fallbacks_total"))
        print("FLEET-REPORT " + String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
    }

    static func spawnWorker(redis: String, origin: URL, prefix: String, barrier: Int) throws -> (Process, Pipe) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["--testing-library", "swift-testing", "--filter", "fleetWorker"]
        var environment = Self.environment
        environment["REDIS_FLEET_WORKER"] = "1"
        environment["REDIS_FLEET_URL"] = redis
        environment["REDIS_FLEET_ORIGIN"] = origin.absoluteString
        environment["REDIS_FLEET_PREFIX"] = prefix
        environment["REDIS_FLEET_BARRIER"] = String(barrier)
        child.environment = environment
        let pipe = Pipe()
        child.standardOutput = pipe
        child.standardError = pipe
        try child.run()
        return (child, pipe)
    }

    static func finish(_ child: Process, _ pipe: Pipe) async throws -> (
        status: Int32, report: WorkerReport?, log: String
    ) {
        let data = await blocking {
            let data = (try? pipe.fileHandleForReading.readToEnd()) ?? Data()
            child.waitUntilExit()
            return data
        }
        let log = String(decoding: data, as: UTF8.self)
        let line = log.split(separator: "\n").first { $0.hasPrefix("FLEET-REPORT ") }
        let report = line.flatMap { try? JSONDecoder().decode(WorkerReport.self, from: Data($0.dropFirst(13).utf8)) }
        return (child.terminationStatus, report, log)
    }

    /// Three processes miss one URL at once: the origin sees one request, and all three get the image.
    @Test func threeProcessesOneURLOneOriginRequest() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let origin = try await CountingOrigin.start(
            body: RedisCacheTesting.image(77, width: 24, height: 10), delay: .milliseconds(400))
        defer { origin.stop() }
        let prefix = "fleet-\(UUID().uuidString.prefix(8)):"
        let url = origin.url("/shared.timg")
        var workers: [(Process, Pipe)] = []
        for _ in 0..<3 {
            workers.append(try Self.spawnWorker(redis: server.url, origin: url, prefix: prefix, barrier: 3))
        }
        var reports: [WorkerReport] = []
        for (child, pipe) in workers {
            let (status, report, log) = try await Self.finish(child, pipe)
            #expect(status == 0, "worker failed:\n\(log.suffix(2000))")
            if let report {
                reports.append(report)
            } else {
                Issue.record("no report from a worker:\n\(log.suffix(2000))")
            }
        }
        #expect(origin.requests("/shared.timg") == 1, "one URL, three replicas: one origin request")
        #expect(reports.count == 3)
        #expect(reports.allSatisfy { $0.width == 24 && $0.red == 77 })
        #expect(reports.map(\.leases).reduce(0, +) == 1, "exactly one process took the lease")
        // The other two got the holder's entry: by waiting for it, or by finding it already stored.
        #expect(reports.map { $0.coalescedHits + ($0.leases == 0 && $0.waits == 0 ? $0.hits : 0) }.reduce(0, +) == 2)
        print("fleet: waits \(reports.map(\.waits)), coalesced hits \(reports.map(\.coalescedHits))")
    }

    /// The holder dies mid-download: a waiter takes the lease over when it expires and downloads itself.
    @Test func aWaiterFetchesItselfWhenTheHolderDies() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let origin = try await CountingOrigin.start(body: RedisCacheTesting.image(33), delay: .zero, hangFirst: true)
        defer { origin.stop() }
        let prefix = "fleet-\(UUID().uuidString.prefix(8)):"
        let url = origin.url("/dies.timg")

        // The holder: a worker whose origin request never gets an answer; killed once the origin has seen it.
        var configuration = try Self.workerConfiguration(
            server.url, prefix: prefix, metrics: TestMetrics(), leaseDuration: 0.5)
        let (holder, holderPipe) = try Self.spawnWorker(redis: server.url, origin: url, prefix: prefix, barrier: 0)
        for _ in 0..<2000 where origin.requests("/dies.timg") == 0 { try await Task.sleep(nanoseconds: 5_000_000) }
        #expect(origin.requests("/dies.timg") == 1)
        kill(holder.processIdentifier, SIGKILL)
        _ = try await Self.finish(holder, holderPipe)
        // The dead holder's lease is still there (the worker's lease lasts 10 s).
        let lease = RedisKeys(prefix: prefix, key: url.absoluteString).lease
        #expect(try await server.cli(["EXISTS", lease]).contains("1"))

        let metrics = TestMetrics()
        configuration.metricsFactory = metrics
        let redis = RedisCache(configuration: configuration)
        defer { redis.shutdown() }
        let loader = HTTPLoader()
        let manager = ImageManager(
            cache: CachesManager([MemoryCache(), redis]), loader: loader, coders: RedisCacheTesting.coders)
        let load = Task {
            try await manager.loadImage(with: url, options: [.waitStoreCache], context: RedisCacheTesting.context())
        }
        // Once this replica waits for the dead holder, let the lease expire, as it would on its own.
        for _ in 0..<2000 where metrics.counterTotal(label: "webimage_redis_coalesced_waits_total") == 0 {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        #expect(origin.requests("/dies.timg") == 1, "a waiter must not fetch while the lease is held")
        _ = try await server.cli(["PEXPIRE", lease, "1"])
        let result = try await load.value
        try await loader.shutdown()
        #expect(result.image.pixels.bytes[0] == 33)
        #expect(origin.requests("/dies.timg") == 2)
        #expect(metrics.counterTotal(label: "webimage_redis_coalesced_waits_total") == 1)
        #expect(metrics.counterTotal(label: "webimage_redis_coalesce_fallbacks_total") == 1)
        #expect(metrics.counterTotal(label: "webimage_redis_leases_total") == 1)
        // Its store released the lease and left the entry for the next replica.
        #expect(try await server.cli(["EXISTS", lease]).contains("0"))
    }
}

/// An HTTP origin that serves one body for every path, counts requests per path, answers after `delay`, and
/// with `hangFirst` never answers the first request of a path.
final class CountingOrigin: Sendable {
    /// Requests per path, shared with the connection handlers.
    final class Counts: Sendable {
        private let values = Mutex([String: Int]())

        func increment(_ path: String) -> Int {
            values.withLock { values in
                values[path, default: 0] += 1
                return values[path, default: 0]
            }
        }

        func value(_ path: String) -> Int { values.withLock { $0[path, default: 0] } }
    }

    private let channel: any Channel
    private let counts: Counts

    private init(channel: any Channel, counts: Counts) {
        self.channel = channel
        self.counts = counts
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)\(path)")! }

    func requests(_ path: String) -> Int { counts.value(path) }

    func stop() { channel.close(promise: nil) }

    static func start(body: Data, delay: TimeAmount, hangFirst: Bool = false) async throws -> CountingOrigin {
        let counts = Counts()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        Handler(body: body, delay: delay, hangFirst: hangFirst, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return CountingOrigin(channel: channel, counts: counts)
    }

    /// One connection's handler, confined to its event loop.
    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let body: Data
        let delay: TimeAmount
        let hangFirst: Bool
        let counts: Counts
        private var path = ""

        init(body: Data, delay: TimeAmount, hangFirst: Bool, counts: Counts) {
            self.body = body
            self.delay = delay
            self.hangFirst = hangFirst
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
            case .body:
                break
            case .end:
                let number = counts.increment(path)
                if hangFirst && number == 1 { return }
                context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in respond(context: context) }
            }
        }

        private func respond(context: ChannelHandlerContext) {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "image/x-test")
            headers.add(name: "Content-Length", value: String(body.count))
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
