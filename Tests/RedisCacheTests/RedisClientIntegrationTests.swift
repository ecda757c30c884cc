import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import RedisCache

/// The RESP client against real `redis-server` processes: pipelining, RESP3, AUTH (password and ACL user),
/// SELECT, unix sockets, TLS, reconnects, timeouts.
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct RedisClientIntegrationTests {
    static func pool(
        _ endpoint: RedisEndpoint, capacity: Int = 2, _ adjust: (inout RedisConnectionOptions) -> Void = { _ in }
    ) -> RedisConnectionPool {
        var options = RedisConnectionOptions()
        options.commandTimeout = .seconds(10)
        options.connectTimeout = .seconds(10)
        adjust(&options)
        return RedisConnectionPool(
            endpoint: endpoint, options: options, capacity: capacity, backoff: Backoff(base: 0.01, maximum: 0.05),
            group: MultiThreadedEventLoopGroup.singleton, clock: RedisCache.monotonicSeconds)
    }

    static func bulk(_ text: String) -> RESPValue { .bulkString(ByteBuffer(string: text)) }

    @Test func pipelinesManyCommandsOverFewConnections() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let pool = Self.pool(server.endpoint)
        defer { pool.shutdown() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask {
                    let value = ByteBuffer(
                        bytes: (0..<(index % 50 * 37)).map { UInt8(truncatingIfNeeded: $0 &* index) })
                    let replies = try await pool.send([
                        .set("k\(index)", value, milliseconds: 60_000), .get("k\(index)"),
                    ]).get()
                    #expect(replies == [.simpleString("OK"), .bulkString(value)])
                }
            }
            try await group.waitForAll()
        }
        #expect(pool.openConnectionCount <= 2)
        #expect(try await server.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines) == "500")
        // A server error reply is a value, not a failure of the connection.
        let wrong = try await pool.send([RedisCommand(["LPUSH", "k1", "x"]), .get("k2")]).get()
        guard case .error(let message) = wrong[0] else {
            Issue.record("expected WRONGTYPE, got \(wrong[0])")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
        #expect(wrong[1].bytes?.readableBytes == 2 % 50 * 37)
    }

    @Test func negotiatesRESP3AndFallsBackToRESP2WhenAsked() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let group = MultiThreadedEventLoopGroup.singleton
        var options = RedisConnectionOptions()
        options.commandTimeout = .seconds(10)
        options.connectTimeout = .seconds(10)
        let resp3 = try await RedisConnection.connect(to: server.endpoint, options: options, group: group).get()
        defer { resp3.close() }
        #expect(resp3.protocolVersion == 3)
        _ = try await resp3.send([RedisCommand(["HSET", "h", "a", "1"])]).get()
        let map = try await resp3.send([RedisCommand(["HGETALL", "h"])]).get()
        #expect(map == [.map([RESPPair(key: Self.bulk("a"), value: Self.bulk("1"))])])

        options.preferRESP3 = false
        let resp2 = try await RedisConnection.connect(to: server.endpoint, options: options, group: group).get()
        defer { resp2.close() }
        #expect(resp2.protocolVersion == 2)
        #expect(
            try await resp2.send([RedisCommand(["HGETALL", "h"])]).get() == [.array([Self.bulk("a"), Self.bulk("1")])])
    }

    @Test func authenticatesWithPasswordOrACLUserAndSelectsADatabase() async throws {
        let server = try await RedisServerProcess.start(["--requirepass", "s3cret"])
        defer { server.destroy() }
        let created = try await server.cli(
            ["-a", "s3cret", "--no-auth-warning", "ACL", "SETUSER", "alice", "on", ">wonderland", "~*", "&*", "+@all"])
        #expect(created.contains("OK"))
        let group = MultiThreadedEventLoopGroup.singleton
        for preferRESP3 in [true, false] {
            var options = RedisConnectionOptions()
            options.commandTimeout = .seconds(10)
            options.connectTimeout = .seconds(10)
            options.preferRESP3 = preferRESP3
            options.password = "s3cret"
            options.database = 3
            let connection = try await RedisConnection.connect(to: server.endpoint, options: options, group: group)
                .get()
            #expect(try await connection.send([RedisCommand(["ACL", "WHOAMI"])]).get().first?.string == "default")
            _ = try await connection.send([.set("in-db-3", ByteBuffer(string: "x"), milliseconds: nil)]).get()
            connection.close()

            options.username = "alice"
            options.password = "wonderland"
            let alice = try await RedisConnection.connect(to: server.endpoint, options: options, group: group).get()
            #expect(try await alice.send([RedisCommand(["ACL", "WHOAMI"])]).get().first?.string == "alice")
            alice.close()

            options.password = "wrong"
            await #expect(throws: RedisClientError.self) {
                _ = try await RedisConnection.connect(to: server.endpoint, options: options, group: group).get()
            }
            do {
                _ = try await RedisConnection.connect(to: server.endpoint, options: options, group: group).get()
            } catch let error as RedisClientError {
                #expect(error.kind == .handshakeFailed && error.message.contains("WRONGPASS"))
            }
        }
        #expect(
            try await server.cli(["-a", "s3cret", "--no-auth-warning", "-n", "3", "EXISTS", "in-db-3"]).contains("1"))
        #expect(
            try await server.cli(["-a", "s3cret", "--no-auth-warning", "-n", "0", "EXISTS", "in-db-3"]).contains("0"))
    }

    @Test func unixSocket() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let address = try RedisServerAddress(url: "redis+unix://\(server.unixSocket)?db=2")
        #expect(address.endpoint == .unix(path: server.unixSocket) && address.database == 2)
        let pool = Self.pool(address.endpoint) { $0.database = 2 }
        defer { pool.shutdown() }
        let replies = try await pool.send([RedisCommand(["PING"]), RedisCommand(["CLIENT", "INFO"])]).get()
        #expect(replies[0] == .simpleString("PONG"))
        #expect(replies[1].string?.contains("db=2") == true)
    }

    @Test func tlsWithVerifiedCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        try await Self.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost", "-keyout", key, "-out", cert,
            ])
        let tlsPort = try await RedisServerProcess.freePort()
        let server = try await RedisServerProcess.start([
            "--tls-port", String(tlsPort), "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert,
            "--tls-auth-clients", "no",
        ])
        defer { server.destroy() }

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(cert)
        let pool = Self.pool(.tcp(host: "127.0.0.1", port: tlsPort)) {
            $0.tls = try? NIOSSLContext(configuration: tls)
            $0.tlsServerName = "localhost"
        }
        defer { pool.shutdown() }
        #expect(try await pool.send([RedisCommand(["PING"])]).get() == [.simpleString("PONG")])

        // The same server without trusting its certificate: the connect fails, nothing is sent in clear.
        let untrusted = Self.pool(.tcp(host: "127.0.0.1", port: tlsPort)) {
            $0.tls = try? NIOSSLContext(configuration: .makeClientConfiguration())
            $0.tlsServerName = "localhost"
        }
        defer { untrusted.shutdown() }
        await #expect(throws: RedisClientError.self) { _ = try await untrusted.send([RedisCommand(["PING"])]).get() }

        // Through the public configuration: rediss:// with the trust roots given.
        var configuration = try RedisCacheConfiguration(url: "rediss://127.0.0.1:\(tlsPort)")
        configuration.tlsConfiguration = tls
        configuration.tlsServerName = "localhost"
        configuration.commandTimeout = 10
        configuration.connectTimeout = 10
        let cache = RedisCache(configuration: configuration)
        defer { cache.shutdown() }
        #expect(await cache.put(Data("over tls".utf8), metadata: nil, forKey: "tls-key"))
        guard case .hit(let data, _) = await cache.lookup("tls-key", options: [], claiming: false) else {
            Issue.record("no hit over TLS")
            return
        }
        #expect(data == Data("over tls".utf8))
    }

    @Test func reconnectsAfterTheServerRestarts() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.destroy() }
        let pool = Self.pool(server.endpoint)
        defer { pool.shutdown() }
        #expect(try await pool.send([RedisCommand(["PING"])]).get() == [.simpleString("PONG")])
        try await server.restart()
        // The old connection is dead; the pool notices, backs off briefly and connects again.
        var answered = false
        for _ in 0..<200 where !answered {
            if (try? await pool.send([RedisCommand(["PING"])]).get()) == [.simpleString("PONG")] {
                answered = true
            } else {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
        }
        #expect(answered)
        #expect(pool.openConnectionCount >= 1)
    }

    @Test func silentServerTimesOut() async throws {
        let silent = try await SilentServer.start()
        let pool = Self.pool(.tcp(host: "127.0.0.1", port: silent.port)) {
            $0.commandTimeout = .milliseconds(100)
            $0.connectTimeout = .milliseconds(200)
        }
        defer { pool.shutdown() }
        do {
            _ = try await pool.send([RedisCommand(["PING"])]).get()
            Issue.record("a server that never answers cannot produce a reply")
        } catch let error as RedisClientError {
            #expect(error.kind == .timedOut)
        }
        await silent.stop()
    }

    static func run(_ executable: String, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        await blocking { process.waitUntilExit() }
        guard process.terminationStatus == 0 else { throw FixtureError("\(executable) failed") }
    }
}
