import AsyncHTTPClient
import Foundation
import ImageService
import NIOHTTP1
import Testing

@testable import ThumbnailServerApp

#if canImport(Glibc)
    import Glibc
#endif

/// The adapter keeps the service's framing on the wire: a `HEAD` states the `Content-Length` its `GET` sends
/// (before, Hummingbird's empty body made it 0), and other methods get the service's 405 with `Allow` (before,
/// the router's 404).
@Suite struct HTTPSemanticsTests {
    @Test func headStatesTheLengthOfTheGet() async throws {
        let origin = TestOrigin(["/photo.jpg": .init(data: try TestImages.jpeg(width: 640, height: 480))])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                for query in ["w=120", "w=-1", "w=120&format=blurhash"] {
                    let url = base + Live.thumbnailPath(source: originBase + "/photo.jpg", query)
                    // HEAD first (a cold miss), then GET (from cache), then HEAD again (from cache).
                    let coldHead = try await Live.send(.HEAD, url)
                    let get = try await Live.get(url)
                    let warmHead = try await Live.send(.HEAD, url)
                    #expect(!get.body.isEmpty, "\(query)")
                    #expect(get.header("Content-Length") == String(get.body.count), "\(query)")
                    for head in [coldHead, warmHead] {
                        #expect(head.status == get.status, "\(query)")
                        #expect(head.body.isEmpty, "\(query)")
                        #expect(head.header("Content-Length") == String(get.body.count), "\(query)")
                        #expect(head.header("Content-Type") == get.header("Content-Type"), "\(query)")
                        #expect(head.header("ETag") == get.header("ETag"), "\(query)")
                    }
                }
            }
        }
    }

    @Test func otherMethodsAreNotAllowed() async throws {
        try await Live.withServer { _, base in
            let url = base + Live.thumbnailPath(source: "http://127.0.0.1:9/photo.jpg", "w=120")
            for method: HTTPMethod in [.POST, .PUT, .PATCH, .DELETE, .OPTIONS] {
                let reply = try await Live.send(method, url)
                #expect(reply.status == 405, "\(method): \(reply.text)")
                #expect(reply.header("Allow") == "GET, HEAD", "\(method)")
            }
        }
    }

    /// A connection persists after an answer exactly when HTTP/1.x says so (RFC 9112 §9.3). Before, Hummingbird
    /// kept an HTTP/1.0 request's connection open (ApacheBench and old proxies read to its end, so each answer
    /// took the idle timeout), and `Connection: Close` or `keep-alive, close` too: it closed only on the exact
    /// value `close`.
    @Test(
        .serialized,
        arguments: [
            ("GET /health HTTP/1.0\r\n\r\n", false),
            ("GET /health HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", false),
            ("GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n", false),
            ("GET /nowhere HTTP/1.0\r\n\r\n", false),
            // After an upgrade the decoder reads nothing more: the next request on it was swallowed.
            ("GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\r\n", false),
            ("CONNECT x:1 HTTP/1.1\r\nHost: x:1\r\n\r\n", false),
            ("GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
            ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", true),
        ])
    func connectionsPersistAsHTTP1Says(request: String, persists: Bool) async throws {
        try await Live.withServer { _, base in
            let port = try #require(Int(base.split(separator: ":").last ?? ""))
            // The socket is read off the cooperative pool: blocking its threads would starve the server under test.
            let answers = try await Self.offThePool { () throws -> (String?, Bool, String?) in
                let connection = try Raw(port: port)
                try connection.send(request)
                guard let head = connection.readHead(seconds: 5) else { return (nil, false, nil) }
                let closed = connection.waitForClose(seconds: persists ? 1 : 2)
                guard !closed else { return (head, true, nil) }
                try connection.send(request)
                return (head, false, connection.readHead(seconds: 5))
            }
            let head = try #require(answers.0, "no answer to \(request)").lowercased()
            if persists {
                #expect(!answers.1, "closed after \(request)")
                if request.contains("HTTP/1.0") { #expect(head.contains("connection: keep-alive"), "\(head)") }
                #expect(answers.2 != nil, "no second answer to \(request)")
            } else {
                #expect(head.contains("connection: close"), "\(head)")
                #expect(answers.1, "still open 2 s after answering \(request)")
            }
        }
    }

    /// RFC 9112 §3.2: an HTTP/1.1 request without a `Host`, or with two, gets 400 and the connection closes (before,
    /// it was served). HTTP/1.0 needs none.
    @Test func anHTTP11RequestNamesItsHostOnce() async throws {
        try await Live.withServer { _, base in
            let port = try #require(Int(base.split(separator: ":").last ?? ""))
            let requests = [
                "GET /health HTTP/1.1\r\n\r\n", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                "GET /health HTTP/1.0\r\n\r\n",
            ]
            let answers = try await Self.offThePool {
                try requests.map { try Raw.exchange(port: port, $0) }
            }
            #expect(answers[0].hasPrefix("HTTP/1.1 400"), "\(answers[0].prefix(80))")
            #expect(answers[1].hasPrefix("HTTP/1.1 400"), "\(answers[1].prefix(80))")
            #expect(answers[2].hasPrefix("HTTP/1.1 200"), "\(answers[2].prefix(80))")
        }
    }

    /// RFC 9112 §6.1: a request with a transfer coding the server does not implement (`gzip, chunked`) gets 501, and
    /// `chunked` applied twice 400; either closes the connection. Before, NIO read such a body as merely chunked and
    /// served the request. A refusal is answered in its turn: the pipelined request before it gets its own answer
    /// first.
    @Test func aTransferCodingItCannotReadIsRefused() async throws {
        try await Live.withServer { _, base in
            let port = try #require(Int(base.split(separator: ":").last ?? ""))
            let good = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
            let coded = "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
            let twice = "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"
            let noHost = "GET /health HTTP/1.1\r\n\r\n"
            let requests = [coded, twice, good + coded + good, good + noHost + good]
            // Read to the connection's end: each must close after its refusal, within the 10 s `exchange` waits.
            let answers = try await Self.offThePool { try requests.map { try Raw.exchange(port: port, $0) } }
            #expect(answers[0].hasPrefix("HTTP/1.1 501"), "\(answers[0].prefix(80))")
            #expect(answers[1].hasPrefix("HTTP/1.1 400"), "\(answers[1].prefix(80))")
            for (answer, refusal) in [(answers[2], "501"), (answers[3], "400")] {
                // A status line follows the previous answer's body directly (`ok` has no line end).
                let statuses = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
                #expect(statuses == ["200", refusal[...]], "\(answer)")
                #expect(answer.lowercased().contains("connection: close"), "\(answer)")
            }
        }
    }

    private static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}

extension Raw {
    /// Reads one answer's head and its `Content-Length` body; nil when none came within `seconds`.
    func readHead(seconds: Double) -> String? {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 1)
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            guard recv(fd, &buffer, 1, 0) == 1 else { return nil }
            received.append(buffer[0])
            guard received.suffix(4).elementsEqual([13, 10, 13, 10]) else { continue }
            let head = String(decoding: received, as: UTF8.self)
            let length =
                head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
            var body = [UInt8](repeating: 0, count: max(length, 1))
            var read = 0
            while read < length, Date() < end {
                let count = body.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + read, length - read, 0) }
                guard count > 0 else { return nil }
                read += count
            }
            return head
        }
        return nil
    }
}
