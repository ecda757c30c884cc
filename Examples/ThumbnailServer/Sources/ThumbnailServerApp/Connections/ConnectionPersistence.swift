import ImageService
import NIOCore
import NIOHTTP1

/// Keeps a connection open after an answer exactly when HTTP/1.x says it persists (RFC 9112 §9.3), and says so
/// on the answer.
///
/// Hummingbird 2 reads the request as Swift HTTP Types, which carry no version, and closes after an answer only
/// when the request's `Connection` field is exactly `close`. An HTTP/1.0 request without `keep-alive` (ApacheBench,
/// old proxies, health checkers) then kept its connection open: a client reading to the end of the connection waited
/// for the idle timeout, one answer per timeout. So did `Connection: Close` or `keep-alive, close`. This handler sits
/// between NIO's HTTP/1 codec and the HTTP Types one, where the version is still known: a request that does not
/// persist reaches Hummingbird with `Connection: close` (so it closes after the answer), and its answer says
/// `Connection: close`; an HTTP/1.0 request that asked for `keep-alive` gets `Connection: keep-alive` on its answer
/// (without it, such a client takes the connection as closing). A request after which NIO's decoder reads no other
/// (``Persistence/endsParsing(_:)``) closes its connection too. A request it can't take as framed (ImageService's
/// `FramingRefusal`) goes no further and nothing read after it is passed on: it is answered here, after the answers
/// to the requests before it, and the connection closes. Event-loop confined.
final class ConnectionPersistence: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What a request asks its answer to say about the connection.
    enum Persistence: Equatable {
        /// The connection closes after the answer.
        case closes
        /// HTTP/1.0 with `keep-alive`: persists only because the answer says so.
        case keptAliveByAgreement
        /// HTTP/1.1's default: persists, nothing to say.
        case persists

        init(_ head: HTTPRequestHead) {
            if !head.isKeepAlive || Self.endsParsing(head) {
                self = .closes
            } else if head.version.major == 1, head.version.minor == 0 {
                self = .keptAliveByAgreement
            } else {
                self = .persists
            }
        }

        /// True for a request after which NIO's HTTP/1 decoder reads no further request: `CONNECT`, or an upgrade
        /// (`Upgrade` with `Connection: upgrade`, as `curl --http2` sends for `h2c`), which the server answers as
        /// plain HTTP/1.1 (RFC 9110 §7.8 lets it ignore the upgrade) while the decoder waits for a protocol switch
        /// that never comes. Kept open, such a connection swallowed the client's next request until the header
        /// timeout; it closes after the answer instead, and the client opens another.
        static func endsParsing(_ head: HTTPRequestHead) -> Bool {
            if head.method == .CONNECT { return true }
            guard head.headers.contains(name: "upgrade") else { return false }
            return head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "upgrade" }
        }
    }

    /// The requests read and not yet answered, oldest first (pipelined answers go out in request order).
    private var unanswered = CircularBuffer<Persistence>()
    /// True between an answer's head and its end.
    private var answering = false
    /// Set once a request was refused: nothing read after it is passed on, and it is answered once every request
    /// before it was.
    private var refusal: FramingRefusal?
    /// True once the refusal's answer was written.
    private var refusalAnswered = false

    init() {}

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil else { return }
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        if let refused = FramingRefusal(head) {
            refusal = refused
            return answerRefusalIfDue(context: context)
        }
        let persistence = Persistence(head)
        unanswered.append(persistence)
        if persistence == .closes { head.headers.replaceOrAdd(name: "connection", value: "close") }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        // An interim answer (1xx) precedes the final one and says nothing about the connection.
        case .head(var head) where head.status.code >= 200:
            guard let persistence = unanswered.popFirst() else { return context.write(data, promise: promise) }
            answering = true
            switch persistence {
            case .closes:
                head.headers.replaceOrAdd(name: "connection", value: "close")
            case .keptAliveByAgreement:
                if head.isKeepAlive { head.headers.replaceOrAdd(name: "connection", value: "keep-alive") }
            case .persists:
                break
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            answering = false
            context.write(data, promise: promise)
            answerRefusalIfDue(context: context)
        default:
            context.write(data, promise: promise)
        }
    }

    /// Answers the refused request once nothing is owed before it, and closes the connection.
    private func answerRefusalIfDue(context: ChannelHandlerContext) {
        guard let refused = refusal, !refusalAnswered, unanswered.isEmpty, !answering else { return }
        refusalAnswered = true
        var headers = HTTPHeaders()
        for field in refused.response.headers { headers.add(name: field.name.rawName, value: field.value) }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: refused.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

extension FramingRefusal {
    /// The refusal of `head`, if any.
    init?(_ head: HTTPRequestHead) {
        self.init(
            isHTTP11: head.version == .http1_1, hostFields: head.headers["host"].count,
            transferCodings: head.headers[canonicalForm: "transfer-encoding"].map(String.init))
    }
}
