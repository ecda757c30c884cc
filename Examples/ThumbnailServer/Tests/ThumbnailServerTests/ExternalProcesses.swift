import Dispatch
import Foundation
import NIOCore
import NIOPosix
import WebImage

/// Test helpers that run real programs: `redis-server`, the built `thumbnail-server`, headless Chromium.
enum External {
    static let environment = ProcessInfo.processInfo.environment
    static let redisServer = environment["REDIS_SERVER"] ?? "/usr/bin/redis-server"
    static let redisCLI = environment["REDIS_CLI"] ?? "/usr/bin/redis-cli"
    static let chromium =
        environment["CHROMIUM"]
        ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/snap/bin/chromium"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        } ?? "/usr/bin/chromium"

    /// Run when installed; with `REQUIRE_REDIS=1` (CI) also when missing, so that the test fails.
    static var redisTestsRun: Bool {
        FileManager.default.isExecutableFile(atPath: redisServer) || environment["REQUIRE_REDIS"] == "1"
    }
    /// Run when installed; with `REQUIRE_CHROMIUM=1` (CI) also when missing, so that the test fails.
    static var browserTestsRun: Bool {
        FileManager.default.isExecutableFile(atPath: chromium) || environment["REQUIRE_CHROMIUM"] == "1"
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The package's `.build` folder: the test bundle is `.build/<triple>/debug/<name>.xctest`.
    static var buildFolder: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The `thumbnail-server` executable built beside the tests (`swift build --build-tests` builds it).
    static var serverExecutable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("thumbnail-server")
    }

    static func freePort() async throws -> Int {
        // Below the kernel's ephemeral range (32768 and up by default), where no outgoing connection's local port
        // lands: a port bound to 0 and released could be taken by a client before the server binds it.
        for _ in 0..<200 {
            let port = Int.random(in: 20_000...32_000)
            guard
                let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: port).get()
            else { continue }
            try await channel.close()
            return port
        }
        struct NoFreePort: Error {}
        throw NoFreePort()
    }

    /// Runs a program to its end; returns its exit status and output (stdout and stderr).
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // Blocking reads and waits on a Dispatch thread, never on the cooperative pool.
        let data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = (try? pipe.fileHandleForReading.readToEnd()) ?? Data()
                process.waitUntilExit()
                continuation.resume(returning: data)
            }
        }
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A long-running program, stopped with SIGTERM by ``stop()``; its output goes to `log`.
    final class Daemon: @unchecked Sendable {
        // @unchecked: `process` is set once at init and only read afterwards.
        let process: Process
        let log: URL

        init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], log: URL) throws {
            guard FileManager.default.isExecutableFile(atPath: executable.path) else {
                throw Failure("\(executable.path) is missing")
            }
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.environment = External.environment.merging(environment) { $1 }
            process.standardOutput = handle
            process.standardError = handle
            self.log = log
            try process.run()
        }

        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        /// Stops it at once. SIGKILL, not SIGTERM: children of the test binary inherit its blocked signal mask,
        /// so they may never see SIGTERM.
        func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// A `redis-server` on a free port in `directory`.
    static func startRedis(in directory: URL) async throws -> (Daemon, port: Int) {
        guard FileManager.default.isExecutableFile(atPath: redisServer) else {
            throw Failure("REQUIRE_REDIS=1 but \(redisServer) is missing: apt-get install redis-server")
        }
        let port = try await freePort()
        let daemon = try Daemon(
            URL(fileURLWithPath: redisServer),
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                directory.path,
            ],
            log: directory.appendingPathComponent("redis.log"))
        for _ in 0..<400 {
            if try await run(redisCLI, ["-p", String(port), "PING"]).output.contains("PONG") { return (daemon, port) }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
        daemon.stop()
        throw Failure("redis-server did not answer: \(daemon.output.suffix(500))")
    }
}
