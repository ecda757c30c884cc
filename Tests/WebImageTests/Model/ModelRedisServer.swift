import Dispatch
import Foundation
import ImageTestSupport
import NIOCore
import NIOPosix
import RedisCache

/// A real `redis-server` on 127.0.0.1 for the fleet (two managers sharing it through `RedisCache`), in its own
/// temporary directory, killed by ``destroy()`` (the same way `RedisCacheTests`' fixture runs one).
final class ModelRedisServer: @unchecked Sendable {
    // @unchecked: `process` is set once by `start` before the server is shared, and read-only after.
    static let environment = ProcessInfo.processInfo.environment
    static let serverBinary = environment["REDIS_SERVER"] ?? "/usr/bin/redis-server"
    static let cliBinary = environment["REDIS_CLI"] ?? "/usr/bin/redis-cli"
    /// True when redis-server is installed; `REQUIRE_REDIS=1` (CI) makes a missing one a failure.
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: serverBinary)
            && FileManager.default.isExecutableFile(atPath: cliBinary)
    }
    static var required: Bool { environment["REQUIRE_REDIS"] == "1" }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// True when the process ended before it answered (its port taken, most likely).
        var exitedAtStart = false
    }

    let port: Int
    let directory: URL
    private var process: Process?

    var url: String { "redis://127.0.0.1:\(port)" }

    private init(port: Int, directory: URL) {
        self.port = port
        self.directory = directory
    }

    /// A server when redis-server is installed; nil when it is not and not required.
    static func startIfInstalled() async throws -> ModelRedisServer? {
        guard installed else {
            if required { throw Failure(description: "REQUIRE_REDIS=1 but \(serverBinary) is missing") }
            return nil
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("model-redis-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A free port is free only when asked: before redis-server binds it, a connection of a test running beside
        // this one may take it as its ephemeral local port. Then it exits at start, and another port is tried.
        for attempt in 1...5 {
            let port = try TestPorts.free()
            let server = ModelRedisServer(port: port, directory: directory)
            do {
                try await server.launch()
                return server
            } catch let failure as Failure where failure.exitedAtStart && attempt < 5 {
                continue
            }
        }
        throw Failure(description: "redis-server found no free port in 5 tries")
    }

    private func launch() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.serverBinary)
        process.arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--dir", directory.path, "--loglevel", "warning",
            "--logfile", directory.appendingPathComponent("redis.log").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        for _ in 0..<400 {
            guard process.isRunning else {
                throw Failure(description: "redis-server exited at start", exitedAtStart: true)
            }
            if await ping() { return }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
        throw Failure(description: "redis-server on port \(port) did not answer")
    }

    private func ping() async -> Bool {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: Self.cliBinary)
        cli.arguments = ["-p", String(port), "PING"]
        let pipe = Pipe()
        cli.standardOutput = pipe
        cli.standardError = FileHandle.nullDevice
        guard (try? cli.run()) != nil else { return false }
        let output = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = (try? pipe.fileHandleForReading.readToEnd()) ?? Data()
                cli.waitUntilExit()
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        return output.contains("PONG")
    }

    /// A replica's cache on this server: keys under `prefix`, fleet coalescing with `coalescing`.
    func cache(prefix: String, coalescing: RedisCacheConfiguration.FleetCoalescing) throws -> RedisCache {
        var configuration = try RedisCacheConfiguration(url: url)
        configuration.keyPrefix = prefix
        // A loaded CI machine: a slow answer is not a failure here.
        configuration.commandTimeout = 10
        configuration.connectTimeout = 10
        configuration.fleetCoalescing = coalescing
        return RedisCache(configuration: configuration)
    }

    /// Kills the server (SIGKILL: processes started from the test binary inherit its blocked SIGTERM) and removes
    /// its directory.
    func destroy() {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
