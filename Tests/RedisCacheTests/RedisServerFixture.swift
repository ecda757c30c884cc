import Dispatch
import Foundation
import ImageTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import RedisCache

/// Whether the tests that need Debian's `redis-server` run: when it is installed, or when `REQUIRE_REDIS=1`
/// (CI), where a missing binary then fails them instead of skipping.
enum RedisTestEnvironment {
    static let environment = ProcessInfo.processInfo.environment
    static let serverBinary = environment["REDIS_SERVER"] ?? "/usr/bin/redis-server"
    static let cliBinary = environment["REDIS_CLI"] ?? "/usr/bin/redis-cli"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: serverBinary)
            && FileManager.default.isExecutableFile(atPath: cliBinary)
    }
    static var required: Bool { environment["REQUIRE_REDIS"] == "1" }
    /// `.enabled(if:)` condition of every test that starts a server.
    static var shouldRun: Bool { installed || required }
}

/// Runs blocking work (waiting for a process) on a Dispatch thread, so the cooperative pool stays free.
func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: work()) }
    }
}

/// Errors of the fixture itself.
struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// True when redis-server could not bind its port (another socket holds it).
    var isAddressInUse: Bool { description.contains("Address already in use") }
}

/// A real `redis-server` process on 127.0.0.1 with its own temporary directory, stopped by ``stop()``.
final class RedisServerProcess: @unchecked Sendable {
    // @unchecked: `process` is replaced only by `start`/`restart`, which the owning test calls serially.
    let port: Int
    let directory: URL
    let unixSocket: String
    private let arguments: [String]
    private var process: Process?

    var url: String { "redis://127.0.0.1:\(port)" }
    var endpoint: RedisEndpoint { .tcp(host: "127.0.0.1", port: port) }

    private init(port: Int, directory: URL, arguments: [String]) {
        self.port = port
        self.directory = directory
        self.unixSocket = directory.appendingPathComponent("redis.sock").path
        self.arguments = arguments
    }

    /// Starts a server on a free port; `extra` are more `redis-server` arguments (`--requirepass x` …).
    static func start(_ extra: [String] = [], port: Int? = nil) async throws -> RedisServerProcess {
        guard RedisTestEnvironment.installed else {
            throw FixtureError(
                "REQUIRE_REDIS=1 but \(RedisTestEnvironment.serverBinary) is missing: apt-get install redis-server")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-test-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A free port is free only when asked: between the probe and redis-server's bind, a connection of a test
        // running beside this one may take it as its ephemeral local port. A port chosen here is chosen again then.
        for attempt in 1...5 {
            var chosen = port ?? 0
            if port == nil { chosen = try await freePort() }
            let server = RedisServerProcess(port: chosen, directory: directory, arguments: extra)
            do {
                try await server.launch()
                return server
            } catch let error as FixtureError where port == nil && attempt < 5 && error.isAddressInUse {
                continue
            }
        }
        throw FixtureError("redis-server found no free port in 5 tries")
    }

    private var baseArguments: [String] {
        [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", directory.path, "--loglevel", "warning",
            "--unixsocket", unixSocket, "--unixsocketperm", "700",
            "--logfile", directory.appendingPathComponent("redis.log").path,
        ]
    }

    private func launch() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RedisTestEnvironment.serverBinary)
        process.arguments = baseArguments + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try await waitUntilReady()
    }

    /// Polls with `redis-cli PING` on the unix socket (plain even when TCP is TLS-only) until the server answers.
    private func waitUntilReady() async throws {
        let password = arguments.firstIndex(of: "--requirepass").map { arguments[$0 + 1] }
        for _ in 0..<400 {
            guard process?.isRunning == true else {
                let log =
                    (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
                throw FixtureError("redis-server exited at start: \(log.suffix(800))")
            }
            var cli = ["-s", unixSocket, "PING"]
            if let password { cli = ["-a", password, "--no-auth-warning"] + cli }
            if (try? await Self.cli(cli))?.contains("PONG") == true { return }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
        throw FixtureError("redis-server on port \(port) did not answer")
    }

    /// Stops the server at once (SIGKILL: a crash, nothing to save) and waits for it to exit.
    ///
    /// Not SIGTERM: processes started from the test binary inherit its blocked signal mask, and redis-server
    /// then never sees SIGTERM.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Starts it again on the same port, empty (nothing is saved). The port may be taken for a moment meanwhile (a
    /// client's ephemeral port, see ``start(_:port:)``): the start is tried again for up to 2 s.
    func restart() async throws {
        stop()
        for attempt in 1...40 {
            do {
                return try await launch()
            } catch let error as FixtureError where error.isAddressInUse && attempt < 40 {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
        }
    }

    /// Stops the server and removes its directory.
    func destroy() {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `redis-cli` against this server and returns its output.
    func cli(_ arguments: [String]) async throws -> String {
        try await Self.cli(["-s", unixSocket] + arguments)
    }

    /// Runs `redis-cli` with `arguments`; the blocking wait runs on a Dispatch thread, not the cooperative pool.
    static func cli(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RedisTestEnvironment.cliBinary)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = await blocking {
            let data = (try? pipe.fileHandleForReading.readToEnd()) ?? Data()
            process.waitUntilExit()
            return data
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A port the kernel just gave out and released (a small race with other processes, acceptable in tests).
    /// A port below the ephemeral range with nothing bound to it (``TestPorts``).
    static func freePort() async throws -> Int { try TestPorts.free() }
}

/// Three `redis-server --cluster-enabled yes` primaries joined by `redis-cli --cluster create`.
final class RedisClusterFixture: Sendable {
    let nodes: [RedisServerProcess]

    private init(nodes: [RedisServerProcess]) { self.nodes = nodes }

    var seedURLs: [String] { nodes.map(\.url) }

    static func start() async throws -> RedisClusterFixture {
        var nodes: [RedisServerProcess] = []
        do {
            for _ in 0..<3 {
                let bus = try await RedisServerProcess.freePort()
                nodes.append(
                    try await RedisServerProcess.start([
                        "--cluster-enabled", "yes", "--cluster-port", String(bus), "--cluster-node-timeout", "2000",
                        "--cluster-config-file", "nodes.conf",
                    ]))
            }
            let output = try await RedisServerProcess.cli(
                ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                    "--cluster-replicas", "0", "--cluster-yes",
                ])
            guard output.contains("[OK] All 16384 slots covered") else {
                throw FixtureError("redis-cli --cluster create failed: \(output.suffix(600))")
            }
            let fixture = RedisClusterFixture(nodes: nodes)
            try await fixture.waitUntilConsistent()
            return fixture
        } catch {
            for node in nodes { node.destroy() }
            throw error
        }
    }

    /// Waits until every node reports `cluster_state:ok` and sees all three primaries.
    func waitUntilConsistent() async throws {
        for _ in 0..<400 {
            var ready = true
            for node in nodes {
                let info = try await node.cli(["CLUSTER", "INFO"])
                let shards = try await node.cli(["CLUSTER", "SHARDS"])
                if !info.contains("cluster_state:ok") || shards.components(separatedBy: "\nmaster\n").count < 4 {
                    ready = false
                }
            }
            if ready { return }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw FixtureError("cluster did not become consistent")
    }

    /// The node id of a node.
    func nodeID(_ node: RedisServerProcess) async throws -> String {
        try await node.cli(["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The node that serves `slot` now, from `CLUSTER NODES` of the first node.
    func owner(ofSlot slot: Int) async throws -> RedisServerProcess {
        let lines = try await nodes[0].cli(["CLUSTER", "NODES"]).split(separator: "\n")
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count > 8, fields[2].contains("master") else { continue }
            let owns = fields.dropFirst(8).contains { range in
                guard !range.hasPrefix("[") else { return false }
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                return bounds.count == 2 ? (bounds[0]...bounds[1]).contains(slot) : bounds.first == slot
            }
            guard owns, let address = fields[1].split(separator: "@").first,
                let port = address.split(separator: ":").last.flatMap({ Int($0) }),
                let node = nodes.first(where: { $0.port == port })
            else { continue }
            return node
        }
        throw FixtureError("no node owns slot \(slot)")
    }

    func destroy() {
        for node in nodes { node.destroy() }
    }
}

/// A TCP server that accepts connections and never answers: the one mock the Redis tests allow.
final class SilentServer: Sendable {
    let channel: any Channel
    var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: any Channel) { self.channel = channel }

    static func start() async throws -> SilentServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                // Read and discard everything; write nothing.
                channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentServer(channel: channel)
    }

    func stop() async { try? await channel.close() }
}
