import Foundation
public import ImageCore
import NIOCore
public import NIOHTTP1
import NIOPosix

/// What the scripted server does with one request.
public indirect enum ServerAction: Sendable {
    /// A complete response with Content-Length.
    case respond(status: HTTPResponseStatus = .ok, headers: [(String, String)] = [], body: [UInt8] = [])
    /// A chunked response: the parts are sent `intervalMilliseconds` apart.
    case chunked(headers: [(String, String)], parts: [[UInt8]], intervalMilliseconds: Int64)
    /// A chunked body that never ends (until the client closes the connection).
    case endless(chunkSize: Int)
    /// A head announcing `declaredLength` bytes, then `body` (shorter), then the connection closes.
    case truncated(declaredLength: Int, body: [UInt8])
    /// Nothing, ever (the client must time out).
    case stall
    /// The connection is reset (RST) instead of answering.
    case reset
    /// Waits until the test opens gate `name`, then performs the action.
    case hold(String, then: ServerAction)
    /// Sends the head and the first `split` bytes, waits for gate `name`, then sends the rest.
    case splitAtGate(String, headers: [(String, String)], body: [UInt8], split: Int)
    /// A head announcing `totalLength` bytes, then `prefix` and filler bytes in `chunkSize` writes, each sent when
    /// the previous one left (so ``TestHTTPServer/Stats/bodyBytesWritten`` counts what the socket took).
    case streamed(headers: [(String, String)], prefix: [UInt8], totalLength: Int, chunkSize: Int)
    /// A chunked PNG-typed body of one byte every `intervalMilliseconds`, forever (a hostile slow server).
    case drip(intervalMilliseconds: Int64)
}

/// One request as the server saw it.
public struct RecordedRequest: Sendable {
    public let index: Int
    public let method: String
    public let uri: String
    public let headers: [(String, String)]
    public let connection: Int

    public var path: String { String(uri.split(separator: "?", maxSplits: 1).first ?? "") }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

/// An in-process HTTP/1.1 server on 127.0.0.1 and a random port, scripted per test (swift-nio, NIOHTTP1).
///
/// It counts connections, in-flight requests (their maximum too) and requests abandoned by the client (the
/// connection closed before the response ended), so tests can check what the loader did on the wire.
public final class TestHTTPServer: Sendable {
    public struct Stats: Sendable {
        public var requests: [RecordedRequest] = []
        public var connectionsOpened = 0
        public var connectionsClosed = 0
        public var inFlight = 0
        public var maxInFlight = 0
        /// Connections that closed while a response was still unfinished.
        public var abandonedResponses = 0
        /// Body bytes of `.streamed` responses whose writes completed.
        public var bodyBytesWritten = 0
        public var openGates: Set<String> = []
        public var waiting: [String: [@Sendable () -> Void]] = [:]
    }

    public typealias Script = @Sendable (RecordedRequest) -> ServerAction

    public let port: Int
    public let stats: Locked<Stats>
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup

    private init(port: Int, stats: Locked<Stats>, channel: any Channel, group: MultiThreadedEventLoopGroup) {
        self.port = port
        self.stats = stats
        self.channel = channel
        self.group = group
    }

    /// Starts a server that answers every request with `script`.
    public static func start(threads: Int = 1, script: @escaping Script) async throws -> TestHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let stats = Locked(Stats())
        let connectionIDs = Locked(0)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let id = connectionIDs.withLock { value -> Int in
                    value += 1
                    return value
                }
                return channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedHTTPHandler(connection: id, stats: stats, script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw ImageError(.downloadFailed, stage: .download) }
        return TestHTTPServer(port: port, stats: stats, channel: channel, group: group)
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Releases every request held at gate `name` (and later ones pass at once).
    public func open(_ name: String) {
        let waiting = stats.withLock { stats -> [@Sendable () -> Void] in
            stats.openGates.insert(name)
            return stats.waiting.removeValue(forKey: name) ?? []
        }
        for resume in waiting { resume() }
    }

    /// Requests whose path is `path`.
    public func requests(to path: String) -> [RecordedRequest] { stats.value.requests.filter { $0.path == path } }

    /// Waits (polling) until `condition` holds on the stats, up to `seconds`; returns whether it did. Generous, as
    /// ImageTestSupport's `waitUntil`: it ends when the condition holds, so only a failing test pays the bound.
    public func waitUntil(seconds: Double = 30, _ condition: (Stats) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(stats.value) { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return condition(stats.value)
    }

    /// Closes the listening socket and the event loops (open connections are closed too).
    public func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// The per-connection handler: records requests and plays the script's action.
private final class ScriptedHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: Int
    private let stats: Locked<TestHTTPServer.Stats>
    private let script: TestHTTPServer.Script
    private var head: HTTPRequestHead?
    private var responding = false
    private var active = true

    init(connection: Int, stats: Locked<TestHTTPServer.Stats>, script: @escaping TestHTTPServer.Script) {
        self.connection = connection
        self.stats = stats
        self.script = script
    }

    func channelActive(context: ChannelHandlerContext) {
        stats.withLock { $0.connectionsOpened += 1 }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        active = false
        let wasResponding = responding
        stats.withLock { stats in
            stats.connectionsClosed += 1
            if wasResponding {
                stats.abandonedResponses += 1
                stats.inFlight -= 1
            }
        }
        responding = false
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            let request = stats.withLock { stats -> RecordedRequest in
                let request = RecordedRequest(
                    index: stats.requests.count, method: "\(head.method)", uri: head.uri,
                    headers: head.headers.map { ($0.name, $0.value) }, connection: connection)
                stats.requests.append(request)
                stats.inFlight += 1
                stats.maxInFlight = max(stats.maxInFlight, stats.inFlight)
                return request
            }
            responding = true
            perform(script(request), context: context, keepAlive: head.isKeepAlive)
        }
    }

    private func perform(_ action: ServerAction, context: ChannelHandlerContext, keepAlive: Bool) {
        guard active else { return }
        switch action {
        case .respond(let status, let headers, let body):
            var fields = HTTPHeaders(headers)
            fields.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
            writeHead(fields, status: status, context: context)
            if !body.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            }
            end(context: context)
        case .chunked(let headers, let parts, let interval):
            var fields = HTTPHeaders(headers)
            fields.replaceOrAdd(name: "Transfer-Encoding", value: "chunked")
            writeHead(fields, flush: true, context: context)
            sendParts(parts[...], interval: interval, context: context)
        case .endless(let chunkSize):
            writeHead(Self.chunkedPNG, flush: true, context: context)
            sendForever(ByteBuffer(repeating: 0x42, count: chunkSize), context: context)
        case .truncated(let declared, let body):
            writeHead(["Content-Type": "image/png", "Content-Length": "\(declared)"], context: context)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            context.close(promise: nil)
        case .stall:
            break
        case .reset:
            // SO_LINGER 0 makes close() send RST instead of FIN.
            let loopContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            let provider = context.channel as? any SocketOptionProvider
            let lingered =
                provider?.setSoLinger(linger(l_onoff: 1, l_linger: 0)) ?? context.eventLoop.makeSucceededVoidFuture()
            lingered.whenComplete { _ in loopContext.value.close(promise: nil) }
        case .streamed(let headers, let prefix, let total, let chunkSize):
            var fields = HTTPHeaders(headers)
            fields.replaceOrAdd(name: "Content-Length", value: "\(total)")
            writeHead(fields, context: context)
            let stats = self.stats
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: prefix))))).whenSuccess {
                stats.withLock { $0.bodyBytesWritten += prefix.count }
            }
            streamBody(total - prefix.count, chunkSize: chunkSize, context: context)
        case .drip(let interval):
            writeHead(Self.chunkedPNG, flush: true, context: context)
            dripForever(interval: interval, context: context)
        case .hold(let gate, let next):
            let resume = resumer(context: context) { handler, context in
                handler.perform(next, context: context, keepAlive: keepAlive)
            }
            if !park(at: gate, resume) { perform(next, context: context, keepAlive: keepAlive) }
        case .splitAtGate(let gate, let headers, let body, let split):
            var fields = HTTPHeaders(headers)
            fields.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
            writeHead(fields, context: context)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body[..<split])))), promise: nil)
            let rest = Array(body[split...])
            let finish: (ScriptedHTTPHandler, ChannelHandlerContext) -> Void = { handler, context in
                guard handler.active else { return }
                context.write(handler.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: rest)))), promise: nil)
                handler.end(context: context)
            }
            let resume = resumer(context: context, finish)
            if !park(at: gate, resume) { finish(self, context) }
        }
    }

    /// The head of an endless or dripping body: a PNG of unknown length.
    private static let chunkedPNG: HTTPHeaders = ["Content-Type": "image/png", "Transfer-Encoding": "chunked"]

    /// Writes a response head; flushed when the body follows on a schedule of its own.
    private func writeHead(
        _ fields: HTTPHeaders, status: HTTPResponseStatus = .ok, flush: Bool = false, context: ChannelHandlerContext
    ) {
        let head = wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields)))
        if flush { context.writeAndFlush(head, promise: nil) } else { context.write(head, promise: nil) }
    }

    private func streamBody(_ remaining: Int, chunkSize: Int, context: ChannelHandlerContext) {
        guard active else { return }
        guard remaining > 0 else { return end(context: context) }
        let count = min(chunkSize, remaining)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let stats = self.stats
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(repeating: 0x5A, count: count)))))
            .assumeIsolated().whenSuccess {
                stats.withLock { $0.bodyBytesWritten += count }
                let (handler, context) = bound.value
                handler.streamBody(remaining - count, chunkSize: chunkSize, context: context)
            }
    }

    private func dripForever(interval: Int64, context: ChannelHandlerContext) {
        guard active else { return }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: [0x89])))), promise: nil)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(interval)) {
            let (handler, context) = bound.value
            handler.dripForever(interval: interval, context: context)
        }
    }

    /// A thread-safe closure that re-enters this handler on its event loop.
    private func resumer(
        context: ChannelHandlerContext, _ body: @escaping (ScriptedHTTPHandler, ChannelHandlerContext) -> Void
    ) -> @Sendable () -> Void {
        let bound = NIOLoopBound((self, context, body), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        return {
            eventLoop.execute {
                let (handler, context, body) = bound.value
                body(handler, context)
            }
        }
    }

    /// Parks `resume` at `gate`; false when the gate is already open.
    private func park(at gate: String, _ resume: @escaping @Sendable () -> Void) -> Bool {
        stats.withLock { stats in
            if stats.openGates.contains(gate) { return false }
            stats.waiting[gate, default: []].append(resume)
            return true
        }
    }

    private func end(context: ChannelHandlerContext) {
        guard active else { return }
        responding = false
        stats.withLock { $0.inFlight -= 1 }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private func sendParts(_ parts: ArraySlice<[UInt8]>, interval: Int64, context: ChannelHandlerContext) {
        guard active else { return }
        guard let part = parts.first else { return end(context: context) }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: part)))), promise: nil)
        let rest = parts.dropFirst()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(interval)) {
            let (handler, context) = bound.value
            handler.sendParts(rest, interval: interval, context: context)
        }
    }

    private func sendForever(_ chunk: ByteBuffer, context: ChannelHandlerContext) {
        guard active else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk)))).assumeIsolated().whenSuccess {
            // Hop instead of recursing: NIO may complete the write synchronously.
            eventLoop.assumeIsolated().execute {
                let (handler, context) = bound.value
                handler.sendForever(chunk, context: context)
            }
        }
    }
}
