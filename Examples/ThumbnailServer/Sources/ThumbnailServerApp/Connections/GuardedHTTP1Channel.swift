import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 child channel with a ``ConnectionGuard`` on every connection (``ByteGuard`` first in the
/// pipeline, ``RequestGuard`` just before Hummingbird's own connection-state handler), and
/// ``ConnectionPersistence`` just before the HTTP Types codec, where a request's version is still known. The socket's
/// send buffer is set to ``ConnectionLimits/sendBufferBytes``.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits
    let registry: ConnectionRegistry
    let logger: Logger

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let guarding = ConnectionGuard(limits: limits, registry: registry, logger: self.logger)
        do {
            try channel.pipeline.syncOperations.addHandler(ByteGuard(guarding), position: .first)
            if let bytes = limits.sendBufferBytes, let options = channel.syncOptions {
                try options.setOption(
                    ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(clamping: bytes))
            }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let bound = NIOLoopBound(guarding, eventLoop: channel.eventLoop)
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let codec = try channel.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
            try channel.pipeline.syncOperations.addHandler(ConnectionPersistence(), position: .before(codec.handler))
            let state = try channel.pipeline.syncOperations.context(handlerType: HTTPConnectionStateHandler.self)
            try channel.pipeline.syncOperations.addHandler(
                RequestGuard(bound.value), position: .before(state.handler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with the connection limits of ``ConnectionLimits`` (see ``ConnectionGuard``).
    static func guardedHTTP1(
        limits: ConnectionLimits, registry: ConnectionRegistry, logger: Logger
    ) -> HTTPServerBuilder {
        .init { responder in
            GuardedHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: .init()), limits: limits, registry: registry,
                logger: logger)
        }
    }
}
