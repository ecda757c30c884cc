import Foundation
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

#if canImport(Glibc)
    import Glibc
#endif

/// The worker pool and its queue, deadlines, health and readiness, metrics and request ids.
@Suite struct OperableTests {
    /// With one worker and a queue of one, distinct slow requests beyond those two are refused at once with 429
    /// and `Retry-After`; the admitted ones complete.
    @Test func aFullQueueAnswers429WithRetryAfter() async throws {
        let origin = TestOrigin()
        for index in 0..<6 {
            origin.set("/slow\(index).jpg", .init(data: try TestImages.jpeg(width: 64, height: 64), delay: 0.6))
        }
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer({
                $0.workers = 1
                $0.queueLimit = 1
            }) { server, base in
                let replies = try await withThrowingTaskGroup(of: Live.Reply.self) { group in
                    for index in 0..<6 {
                        group.addTask {
                            try await Live.get(
                                base + Live.thumbnailPath(source: originBase + "/slow\(index).jpg", "w=16"))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let statuses = replies.map(\.status).sorted()
                #expect(statuses == [200, 200, 429, 429, 429, 429], "\(statuses)")
                #expect(replies.filter { $0.status == 429 }.allSatisfy { $0.header("Retry-After") == "1" })
                #expect(server.metrics.value("thumbnail_rejected_total", ["reason": "queue_full"]) == 4)
                #expect(server.metrics.value("thumbnail_requests_total", ["status": "429", "format": "none"]) == 4)
                #expect(origin.totalHits == 2)
            }
        }
    }

    /// A request that outlives its deadline gets 504, and its work stops with it: nothing it started is left
    /// running or half-stored, so the next request fetches the source again.
    @Test func requestsHaveADeadline() async throws {
        let origin = TestOrigin(["/slow.jpg": .init(data: try TestImages.jpeg(width: 64, height: 64), delay: 1.0)])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer({ $0.requestTimeout = 0.3 }) { server, base in
                let url = base + Live.thumbnailPath(source: originBase + "/slow.jpg", "w=16")
                let late = try await Live.get(url)
                #expect(late.status == 504)
                #expect(server.metrics.value("thumbnail_rejected_total", ["reason": "deadline"]) == 1)
                #expect(server.metrics.value("thumbnail_in_flight") == 0)
                origin.set("/slow.jpg", .init(data: try TestImages.jpeg(width: 64, height: 64)))
                let next = try await Live.get(url)
                #expect(next.status == 200)
                #expect(origin.hits("/slow.jpg") == 2)
            }
        }
    }

    /// `/health`, `/ready`, an `X-Request-Id` on every answer (the client's own when it sends a sane one), and the
    /// metrics on their own port with the documented names.
    @Test func healthReadinessRequestIDsAndMetrics() async throws {
        let origin = TestOrigin(["/a.jpg": .init(data: try TestImages.jpeg())])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer({ $0.metricsPort = 0 }) { server, base in
                try await Live.expectStatus(base + "/health", 200)
                try await Live.expectStatus(base + "/ready", 200)
                let url = base + Live.thumbnailPath(source: originBase + "/a.jpg", "w=20")
                let first = try await Live.get(url, headers: [("X-Request-Id", "req-123")])
                #expect(first.header("X-Request-Id") == "req-123")
                let second = try await Live.get(url, headers: [("X-Request-Id", "bad id with spaces")])
                #expect(second.header("X-Request-Id").map { $0.count == 36 } == true)
                _ = try await Live.get(base + Live.thumbnailPath(source: originBase + "/missing.jpg", "w=20"))

                var port: Int?
                for _ in 0..<100 where port == nil {
                    port = server.metricsPort.value
                    if port == nil { try await Task.sleep(for: .milliseconds(20)) }
                }
                let metrics = try await Live.get("http://127.0.0.1:\(try #require(port))/metrics")
                #expect(metrics.status == 200)
                let text = metrics.text
                for name in [
                    "thumbnail_requests_total", "thumbnail_cache_hits_total", "thumbnail_cache_misses_total",
                    "thumbnail_origin_requests_total", "thumbnail_origin_seconds_bucket",
                    "thumbnail_decode_seconds_bucket",
                    "thumbnail_resize_seconds_bucket", "thumbnail_encode_seconds_bucket",
                    "thumbnail_store_seconds_bucket",
                    "thumbnail_queue_depth", "thumbnail_in_flight", "thumbnail_http_in_flight",
                    "process_resident_memory_bytes",
                ] {
                    #expect(text.contains("\n\(name)") || text.hasPrefix(name), "\(name) missing")
                }
                func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
                    ServerMetrics.value(name, labels, in: text)
                }
                #expect(value("thumbnail_requests_total", ["status": "200", "format": "jpeg"]) == 2)
                #expect(value("thumbnail_requests_total", ["status": "404", "format": "none"]) == 1)
                #expect(value("thumbnail_cache_hits_total", ["kind": "result", "level": "memory"]) == 1)
                #expect(value("thumbnail_cache_misses_total", ["kind": "result"]) == 2)
                #expect(value("thumbnail_cache_misses_total", ["kind": "source"]) == 2)
                #expect(value("thumbnail_origin_requests_total") == 2)
                #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000)
                // The main port does not serve metrics.
                try await Live.expectStatus(base + "/metrics", 404)
            }
        }
    }
}

/// The kernel's share of what a connection may hold (``ConnectionLimits/sendBufferBytes``).
@Suite struct SendBufferTests {
    /// Each accepted connection's `SO_SNDBUF` is the configured bound (Linux reports twice what was set), so a
    /// client that doesn't read stalls its answer after that many bytes instead of the kernel's autotuned 4 MiB;
    /// without a bound the kernel's own size stays.
    @Test func eachConnectionsSendBufferIsTheConfiguredBound() async throws {
        for bound in [64 << 10, nil] as [Int?] {
            let reported = try await Live.withServer({ $0.connectionLimits.sendBufferBytes = bound }) { _, base in
                let port = try #require(Int(base.split(separator: ":").last ?? ""))
                let client = try Raw(port: port)
                defer { close(client.fd) }
                try client.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(client.readHead(seconds: 10)?.hasPrefix("HTTP/1.1 200") == true)
                return try #require(Self.serverSideSendBuffer(serverPort: port, clientFD: client.fd))
            }
            if let bound {
                #expect(reported == 2 * bound, "SO_SNDBUF \(reported)")
            } else {
                #expect(reported != 2 * (64 << 10) && reported != 2 * (256 << 10), "SO_SNDBUF \(reported)")
            }
        }
    }

    /// `SO_SNDBUF` of the server's end of `clientFD`'s connection: the socket of this process whose local port is
    /// `serverPort` and whose peer is the client's local port (the server runs in the test's process).
    private static func serverSideSendBuffer(serverPort: Int, clientFD: Int32) -> Int? {
        guard let clientPort = port(of: clientFD, peer: false) else { return nil }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in descriptors.compactMap(Int32.init) where fd != clientFD {
            guard port(of: fd, peer: false) == serverPort, port(of: fd, peer: true) == clientPort else { continue }
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, &length) == 0 else { return nil }
            return Int(value)
        }
        return nil
    }

    /// `fd`'s local port (or its peer's); nil when it is no connected (or bound) IPv4 socket.
    static func port(of fd: Int32, peer: Bool) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
            }
        }
        guard status == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The queue of connections the kernel completes for the server to accept (``ConnectionLimits/listenBacklog``).
@Suite struct ListenBacklogTests {
    /// The listening socket's backlog is the configured one (the kernel caps it at `net.core.somaxconn`), read back
    /// from the socket itself: Linux's `TCP_INFO` on a listening socket reports its backlog in `tcpi_sacked`. With
    /// Hummingbird's 256 a burst of connects while the accept loop was busy made the kernel drop SYNs.
    @Test func theListeningSocketHasTheConfiguredBacklog() async throws {
        let ceiling =
            (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 4096
        for configured in [ConnectionLimits().listenBacklog, 300] {
            let backlog = try await Live.withServer({ $0.connectionLimits.listenBacklog = configured }) { _, base in
                let port = try #require(Int(base.split(separator: ":").last ?? ""))
                return try #require(Self.backlog(ofListenerOn: port))
            }
            #expect(backlog == min(configured, ceiling), "configured \(configured), somaxconn \(ceiling)")
        }
        #expect(ConnectionLimits().listenBacklog >= 1024)
    }

    /// The backlog of this process's listening socket on `port` (the server runs in the test's process).
    private static func backlog(ofListenerOn port: Int) -> Int? {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in descriptors.compactMap(Int32.init) {
            guard SendBufferTests.port(of: fd, peer: false) == port, SendBufferTests.port(of: fd, peer: true) == nil
            else { continue }
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0, info.tcpi_state == 10 else {
                continue  // 10: TCP_LISTEN
            }
            return Int(info.tcpi_sacked)
        }
        return nil
    }
}

/// `HUGE_PAGES` reaches the process's pixel pool, where the server's decoders take their blocks.
@Suite struct HugePagesSettingTests {
    @Test func theSettingIsThePools() async throws {
        defer { PixelPool.shared.usesHugePages = true }
        for wanted in [false, true] {
            PixelPool.shared.usesHugePages = !wanted
            let applied = try await Live.withServer({ $0.usesHugePages = wanted }) { _, _ in
                PixelPool.shared.usesHugePages
            }
            #expect(applied == wanted)
        }
    }
}

/// The connection guard's rules as a pure state machine: which limit closes a connection, and when one may be
/// evicted to make room.
@Suite struct ConnectionGuardStateTests {
    let limits = ConnectionLimits(idleTimeout: 60, headerTimeout: 10, writeTimeout: 30, maxConnections: 10)

    @Test func idleThenHeaderTimeouts() {
        var state = ConnectionGuardState(limits: limits, now: 0)
        #expect(state.verdict(now: 59) == .keep)
        #expect(state.verdict(now: 61).isClose, "idle too long")
        state.bytesRead(now: 55)
        #expect(state.verdict(now: 61) == .keep, "a request began: the header timeout applies, from its first byte")
        #expect(state.verdict(now: 65.5).isClose)
        state.headRead(now: 56)
        #expect(state.verdict(now: 65.5).isClose, "the body must arrive within the same 10 s")
        state.endRead(now: 57)
        #expect(state.verdict(now: 500) == .keep, "answering: no read timeout")
        #expect(!state.isEvictable)
        state.answerEnded(now: 600)
        #expect(state.isEvictable)
        #expect(state.verdict(now: 659) == .keep && state.verdict(now: 661).isClose)
    }

    @Test func writeTimeoutOnlyWhileTheSocketIsFull() {
        var state = ConnectionGuardState(limits: limits, now: 0)
        state.bytesRead(now: 0)
        state.headRead(now: 0)
        state.endRead(now: 0)
        state.writabilityChanged(false, now: 1)
        #expect(state.verdict(now: 30) == .keep)
        state.writeCompleted(now: 20)
        #expect(state.verdict(now: 49) == .keep)
        #expect(state.verdict(now: 51).isClose)
        state.writabilityChanged(true, now: 52)
        #expect(state.verdict(now: 200) == .keep)
    }

    @Test func pipelinedRequestsKeepTheConnectionAnswering() {
        var state = ConnectionGuardState(limits: limits, now: 0)
        state.bytesRead(now: 0)
        for _ in 0..<3 {
            state.headRead(now: 0)
            state.endRead(now: 0)
        }
        state.answerEnded(now: 1)
        state.answerEnded(now: 2)
        #expect(state.phase == .answering && !state.isEvictable)
        state.answerEnded(now: 3)
        #expect(state.phase == .idle && state.isEvictable)
    }
}

extension ConnectionGuardState.Verdict {
    var isClose: Bool { if case .close = self { true } else { false } }
}
