import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import WebImage

@testable import ThumbnailServerApp

#if canImport(Glibc)
    import Glibc
#endif

/// The seven defects of issue 33, each reproduced through HTTP against a live server as a client and an origin
/// would. The server is configured through the environment names (``ThumbnailServerConfiguration/load``), which
/// older servers ignore when they don't know them, so this file also builds and runs unchanged against the
/// ThumbnailServer of c19952b — checked by running it there: all seven fail, each on its defect (4 on both halves:
/// the half-sent request stays open, and none of the connections beyond the cap is closed).
@Suite(.serialized) struct DefectTests {
    /// 1. The gallery signs links for whatever `Host` a request names: a signing oracle. Its page must come from
    /// configuration alone.
    @Test func theGalleryIsNoSigningOracle() async throws {
        try await Defect.withServer(["SIGNING_KEYS": "00112233445566778899aabbccddeeff", "SAMPLES": "1"]) {
            _, _, port in
            let page = try Raw.exchange(
                port: port,
                "GET / HTTP/1.1\r\nHost: attacker.example:8443/any/path?x#\r\nConnection: close\r\n\r\n")
            #expect(page.contains("200 OK"), "\(page.prefix(300))")
            #expect(!page.contains("attacker"), "the page signs a source named by the Host header")
            // Every link's source is the server's own sample origin.
            let sources = page.components(separatedBy: "url=").dropFirst().map { $0.prefix(while: { $0 != "&" }) }
            #expect(!sources.isEmpty)
            for source in sources {
                let decoded = String(source).removingPercentEncoding ?? ""
                #expect(decoded.hasPrefix("http://127.0.0.1:\(port)/samples/"), "\(decoded)")
            }
        }
    }

    /// 2. A conditional request on a cache miss downloads its source before it asks for a worker: with one worker
    /// and a queue of one, eight such requests for distinct sources made eight downloads at once.
    @Test func conditionalRequestsWaitForAWorker() async throws {
        let origin = Defect.Origin()
        for index in 0..<8 {
            origin.set("/big\(index).jpg", .init(data: try TestImages.jpeg(width: 400, height: 300), delay: 0.6))
        }
        try await origin.run { originBase in
            try await Defect.withServer(["WORKERS": "1", "QUEUE_LIMIT": "1"]) { _, base, _ in
                let start = ContinuousClock.now
                let replies = try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            let reply = try await Live.get(
                                base + Live.thumbnailPath(source: originBase + "/big\(index).jpg", "w=32"),
                                headers: [("If-None-Match", "\"stale\"")])
                            return (reply.status, ContinuousClock.now - start)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(origin.maxInFlight <= 1, "origin downloads at once: \(origin.maxInFlight)")
                let refused = replies.filter { $0.0 == 429 }
                #expect(refused.count == 6, "\(replies.map(\.0))")
                #expect(refused.allSatisfy { $0.1 < .milliseconds(300) }, "429s came after \(refused.map(\.1))")
            }
        }
    }

    /// 3. Work outlives the request's deadline: a slow chain of redirects kept the worker after the 504, and the
    /// next client waited behind it. One deadline bounds every hop and frees the worker when it passes.
    @Test func theDeadlineBoundsAllTheWorkAndFreesTheWorker() async throws {
        let origin = Defect.Origin()
        for hop in 0..<4 {
            origin.set("/hop\(hop)", .init(status: 302, headers: ["Location": "/hop\(hop + 1)"], delay: 0.7))
        }
        origin.set("/hop4", .init(data: try TestImages.jpeg(width: 64, height: 64)))
        origin.set("/fast.jpg", .init(data: try TestImages.jpeg(width: 64, height: 64)))
        try await origin.run { originBase in
            try await Defect.withServer(["WORKERS": "1", "QUEUE_LIMIT": "4", "REQUEST_TIMEOUT": "1"]) {
                server, base, _ in
                let start = ContinuousClock.now
                let late = try await Live.get(base + Live.thumbnailPath(source: originBase + "/hop0", "w=16"))
                let answered = ContinuousClock.now - start
                #expect(late.status == 504)
                #expect(answered < .milliseconds(1400), "answered after \(answered)")
                try await Task.sleep(for: .milliseconds(100))
                #expect(server.metrics.value("thumbnail_in_flight") == 0, "the worker is still busy")
                let next = try await Live.get(base + Live.thumbnailPath(source: originBase + "/fast.jpg", "w=16"))
                #expect(next.status == 200, "the next request: \(next.status)")
                try await Task.sleep(for: .milliseconds(1500))
                #expect(origin.hits("/hop3") == 0, "hops after the deadline were still fetched")
            }
        }
    }

    /// 4. No header or idle timeout: a half-sent request stayed open indefinitely, and enough of them locked
    /// everyone out. Half-sent requests are closed after the header timeout, and beyond the connection cap the
    /// oldest of them make room for real clients.
    @Test func halfSentRequestsAreClosedAndCannotLockClientsOut() async throws {
        try await Defect.withServer(["HEADER_TIMEOUT": "1", "MAX_CONNECTIONS": "8"]) { _, base, port in
            let half = try Raw(port: port)
            try half.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            let start = ContinuousClock.now
            let closed = half.waitForClose(seconds: 4)
            #expect(closed, "a half-sent request is still open after 4 s")
            #expect(ContinuousClock.now - start < .seconds(3))
            // Twenty half-sent connections against a cap of eight: /health still answers at once.
            let many = try (0..<20).map { _ in try Raw(port: port) }
            for connection in many { try connection.send("GET /health HTTP/1.1\r\nHost: x\r\n") }
            let healthStart = ContinuousClock.now
            try await Live.expectStatus(base + "/health", 200)
            #expect(ContinuousClock.now - healthStart < .milliseconds(500))
            _ = many
        }
        // The cap alone, with a header timeout that closes nothing during the test: beyond the cap of eight,
        // half-sent connections are closed to make room (twenty would hold c19952b's file descriptors forever; there
        // 1,124 of them locked everyone out). Whatever closes them here is the cap. Which twelve is the server's
        // order of arrival, which two event loops may interleave against the order the client connected in (CI of
        // 2c543d6 closed 11 of the client's first 12 and one later one), so the count is what is checked.
        try await Defect.withServer(["HEADER_TIMEOUT": "120", "MAX_CONNECTIONS": "8"]) { _, base, port in
            let many = try (0..<20).map { _ in try Raw(port: port) }
            for connection in many { try connection.send("GET /health HTTP/1.1\r\nHost: x\r\n") }
            try await Live.expectStatus(base + "/health", 200)
            var closed = Set<Int>()
            let deadline = Date().addingTimeInterval(5)
            while closed.count < 12, Date() < deadline {
                for (index, connection) in many.enumerated() where !closed.contains(index) {
                    if connection.waitForClose(seconds: 0.01) { closed.insert(index) }
                }
            }
            #expect(closed.count >= 12, "of 20 half-sent connections against a cap of 8, only \(closed.count) closed")
        }
    }

    /// 5. Changed sources were served stale forever: a source's `max-age` is honoured, then it is revalidated, and
    /// a changed source changes the bytes, the sizes rendered from it, the ETag, and a 304 for the old ETag is no
    /// more; the answer never promises more than the source allows.
    @Test func aChangedSourceIsSeenOnceItsMaxAgePassed() async throws {
        let origin = Defect.Origin()
        let first = try TestImages.png(
            TestImages.marked(width: 80, height: 80, square: (0, 0, 80), colour: (250, 0, 0)))
        let second = try TestImages.png(
            TestImages.marked(width: 120, height: 60, square: (0, 0, 120), colour: (0, 0, 250)))
        origin.set(
            "/changing.png",
            .init(data: first, contentType: "image/png", headers: ["Cache-Control": "max-age=1", "ETag": "\"v1\""]))
        try await origin.run { originBase in
            try await Defect.withServer([:]) { _, base, _ in
                let url = base + Live.thumbnailPath(source: originBase + "/changing.png", "w=64&format=png")
                let before = try await Live.get(url)
                #expect(before.status == 200)
                let maxAge = before.header("Cache-Control") ?? ""
                #expect(maxAge.contains("max-age=1") || maxAge.contains("max-age=0"), "\(maxAge)")
                let oldTag = try #require(before.header("ETag"))
                origin.set(
                    "/changing.png",
                    .init(
                        data: second, contentType: "image/png",
                        headers: ["Cache-Control": "max-age=1", "ETag": "\"v2\""]))
                try await Task.sleep(for: .milliseconds(1600))
                let after = try await Live.get(url)
                #expect(after.status == 200)
                #expect(after.header("ETag") != oldTag)
                #expect(try after.image().width == 64 && after.image().height == 32, "still the old source")
                let revalidated = try await Live.get(url, headers: [("If-None-Match", oldTag)])
                #expect(revalidated.status == 200, "304 for the old ETag")
                let other = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/changing.png", "w=40&format=png"))
                #expect(try other.image().height == 20, "a new size rendered from the old source")
            }
        }
    }

    /// 6. Clients that pipeline and never read cost memory: each held its answers in the server. Output per
    /// connection is bounded (a connection whose answers aren't read is not read).
    @Test func clientsThatNeverReadCostBoundedMemory() async throws {
        let origin = Defect.Origin()
        var noise = [UInt8](repeating: 0, count: 1400 * 1400 * 3)
        var state: UInt32 = 7
        for index in noise.indices {
            state = state &* 1_103_515_245 &+ 12345
            noise[index] = UInt8(truncatingIfNeeded: state >> 16)
        }
        let big = try TestImages.png(
            Image(pixels: PixelBuffer(width: 1400, height: 1400, layout: .rgb8, bytes: noise)))
        origin.set("/noise.png", .init(data: big, contentType: "image/png"))
        try await origin.run { originBase in
            try await Defect.withServer(["MAX_SOURCE_BYTES": "\(64 << 20)", "RESULT_MEMORY_MB": "64"]) {
                _, base, port in
                let path = Live.thumbnailPath(source: originBase + "/noise.png", "w=1400&format=png")
                let warm = try await Live.get(base + path)
                #expect(warm.status == 200 && warm.body.count > 3_000_000, "\(warm.body.count)")
                try await Task.sleep(for: .milliseconds(300))
                let idle = ProcessMemory.residentBytes() ?? 0
                let request = "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"
                let clients = try (0..<60).map { _ in try Raw(port: port) }
                for client in clients { try client.send(String(repeating: request, count: 8)) }
                try await Task.sleep(for: .seconds(3))
                let loaded = ProcessMemory.residentBytes() ?? 0
                let growth = (loaded - idle) >> 20
                print("non-reading pipelining clients: RSS \(idle >> 20) MiB idle, \(loaded >> 20) MiB under attack")
                #expect(growth <= 64, "RSS grew \(growth) MiB")
                _ = clients
            }
        }
    }

    /// 7. The source policy was skipped on cache hits: after a host left the policy, its cached thumbnail and new
    /// sizes of its cached source were still served. The policy is judged on every answer.
    @Test func thePolicyIsJudgedOnCachedAnswers() async throws {
        let origin = Defect.Origin()
        origin.set("/photo.jpg", .init(data: try TestImages.jpeg()))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await origin.run { originBase in
            let cached = Live.thumbnailPath(source: originBase + "/photo.jpg", "w=100")
            let newSize = Live.thumbnailPath(source: originBase + "/photo.jpg", "w=60")
            try await Defect.withServer(["ALLOWED_HOSTS": "127.0.0.1"], directory: directory) { _, base, _ in
                try await Live.expectStatus(base + cached, 200)
            }
            try await Task.sleep(for: .milliseconds(300))  // the disk writes are asynchronous
            // The host is no longer allowed.
            try await Defect.withServer(["ALLOWED_HOSTS": "images.example.com"], directory: directory) { _, base, _ in
                try await Live.expectStatus(base + cached, 403)
                try await Live.expectStatus(base + newSize, 403)
            }
            // The host is, but its address no longer is.
            try await Defect.withServer(["ALLOWED_ADDRESSES": ""], directory: directory) { _, base, _ in
                try await Live.expectStatus(base + cached, 403)
                try await Live.expectStatus(base + newSize, 403)
            }
        }
    }
}

/// Helpers of ``DefectTests`` that work with both this server and the one of c19952b.
enum Defect {
    /// A live server configured from environment names (plus the test basics: port 0, unsigned allowed unless
    /// keys are given, the loopback origin allowed, no metrics listener).
    static func withServer(
        _ environment: [String: String], directory: URL? = nil,
        _ body: @Sendable (_ server: ThumbnailServer, _ base: String, _ port: Int) async throws -> Void
    ) async throws {
        var settings = ["ALLOWED_ADDRESSES": "127.0.0.1/32", "LOG_LEVEL": "error"]
        if environment["SIGNING_KEYS"] == nil { settings["ALLOW_UNSIGNED"] = "1" }
        settings.merge(environment) { $1 }
        let loaded = try ThumbnailServerConfiguration.load(environment: settings, arguments: ["test"])
        try await Live.withServer({ configuration in
            let directory = directory ?? configuration.cacheDirectory
            configuration = loaded
            configuration.port = 0
            configuration.metricsPort = nil
            configuration.cacheDirectory = directory
        }) { server, base in
            let port = Int(base.split(separator: ":").last ?? "0") ?? 0
            try await body(server, base, port)
        }
    }

    /// An origin with scripted answers that counts requests per path and requests in flight.
    final class Origin: Sendable {
        struct Answer: Sendable {
            var status: Int = 200
            var data = Data()
            var contentType = "image/jpeg"
            var headers: [String: String] = [:]
            var delay: Double = 0
        }

        private struct State {
            var answers: [String: Answer] = [:]
            var hits: [String: Int] = [:]
            var inFlight = 0
            var maxInFlight = 0
        }
        private let state = Mutex(State())

        func set(_ path: String, _ answer: Answer) { state.withLock { $0.answers[path] = answer } }
        func hits(_ path: String) -> Int { state.withLock { $0.hits[path, default: 0] } }
        var maxInFlight: Int { state.withLock { $0.maxInFlight } }

        func run(_ body: @Sendable (_ base: String) async throws -> Void) async throws {
            let router = Router()
            router.get("/**") { request, _ -> Response in
                let answer = self.state.withLock { state -> Answer? in
                    state.hits[request.uri.path, default: 0] += 1
                    state.inFlight += 1
                    state.maxInFlight = max(state.maxInFlight, state.inFlight)
                    return state.answers[request.uri.path]
                }
                defer { self.state.withLock { $0.inFlight -= 1 } }
                guard let answer else { return Response(status: .notFound) }
                if answer.delay > 0 { try? await Task.sleep(for: .milliseconds(Int64(answer.delay * 1000))) }
                var headers: HTTPFields = [.contentType: answer.contentType]
                for (name, value) in answer.headers { headers[HTTPField.Name(name)!] = value }
                return Response(
                    status: .init(code: answer.status), headers: headers,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.data)))
            }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(.live) { client in
                try await body("http://127.0.0.1:\(try #require(client.port))")
            }
        }
    }
}

/// A raw TCP client on 127.0.0.1, for what an HTTP client won't do: half-sent requests, a `Host` of any shape,
/// pipelining without reading.
final class Raw: @unchecked Sendable {
    // @unchecked: the descriptor is only used by the test that made it, one call at a time.
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            close(fd)
            throw External.Failure("connect failed: \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw External.Failure("send failed: \(errno)") }
            sent += count
        }
    }

    /// Reads until the peer closes or `seconds` pass; true when it closed.
    func waitForClose(seconds: Double) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < end {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return true }
        }
        return false
    }

    /// Sends `request` and reads everything until the peer closes (at most 10 s).
    static func exchange(port: Int, _ request: String) throws -> String {
        let connection = try Raw(port: port)
        try connection.send(request)
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let end = Date().addingTimeInterval(10)
        while Date() < end {
            var poller = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(connection.fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
