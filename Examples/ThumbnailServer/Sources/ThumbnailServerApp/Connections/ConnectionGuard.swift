import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// The limits of one connection (``ConnectionLimits``) applied by two channel handlers that share one
/// ``ConnectionGuardState``: ``ByteGuard`` at the front of the pipeline (raw bytes: the first byte of a request,
/// writes completing, writability, and reads held back while the client doesn't read its answers) and
/// ``RequestGuard`` after the HTTP codec (a request's head and end, an answer's end). A timer on the connection's
/// event loop checks the state four times a second and closes the connection when a limit passed.
///
/// Hummingbird 2.28 has an idle timeout (`HTTP1Channel.Configuration.idleTimeout`, reset by every request part,
/// so a client sending a byte at a time keeps it open, and none while a response waits to be read) and a connection
/// cap that stops accepting (so half-sent connections fill it and real clients wait in the backlog); these
/// handlers add the header and write timeouts, the cap that evicts, and the read gate. Event-loop confined.
final class ConnectionGuard {
    var state: ConnectionGuardState
    let registry: ConnectionRegistry
    let logger: Logger
    weak var channel: (any Channel)?
    private var timer: RepeatedTask?
    /// A `read` withheld while the socket was not writable.
    var heldRead = false

    init(limits: ConnectionLimits, registry: ConnectionRegistry, logger: Logger) {
        state = ConnectionGuardState(limits: limits, now: Self.now)
        self.registry = registry
        self.logger = logger
    }

    static var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Starts watching `channel`; false when it was refused (the cap).
    func start(_ channel: any Channel) -> Bool {
        self.channel = channel
        guard registry.opened(channel) else { return false }
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        timer = channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) {
            _ in bound.value.check()
        }
        return true
    }

    func stop() {
        timer?.cancel()
        timer = nil
        if let channel { registry.closed(channel) }
    }

    func changed() {
        if let channel { registry.setEvictable(channel, state.isEvictable) }
    }

    private func check() {
        guard case .close(let reason) = state.verdict(now: Self.now), let channel else { return }
        logger.debug("closing a connection", metadata: ["reason": .string(reason)])
        timer?.cancel()
        timer = nil
        channel.close(promise: nil)
    }
}

/// The raw-byte half of ``ConnectionGuard`` (first in the pipeline).
final class ByteGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let guarding: ConnectionGuard

    init(_ guarding: ConnectionGuard) { self.guarding = guarding }

    func handlerAdded(context: ChannelHandlerContext) {
        if !guarding.start(context.channel) { context.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { guarding.stop() }

    func channelInactive(context: ChannelHandlerContext) {
        guarding.stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guarding.state.bytesRead(now: ConnectionGuard.now)
        guarding.changed()
        context.fireChannelRead(data)
    }

    /// Reads only while the client reads its answers: bounded output per connection.
    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            guarding.heldRead = true
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let done = promise ?? context.eventLoop.makePromise()
        let bound = NIOLoopBound(guarding, eventLoop: context.eventLoop)
        done.futureResult.whenSuccess { bound.value.state.writeCompleted(now: ConnectionGuard.now) }
        context.write(data, promise: done)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        guarding.state.writabilityChanged(writable, now: ConnectionGuard.now)
        if writable && guarding.heldRead {
            guarding.heldRead = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }
}

/// The HTTP half of ``ConnectionGuard`` (after the HTTP codec).
final class RequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let guarding: ConnectionGuard

    init(_ guarding: ConnectionGuard) { self.guarding = guarding }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: guarding.state.headRead(now: ConnectionGuard.now)
        case .end: guarding.state.endRead(now: ConnectionGuard.now)
        case .body: break
        }
        guarding.changed()
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            guarding.state.answerEnded(now: ConnectionGuard.now)
            guarding.changed()
        }
        context.write(data, promise: promise)
    }
}
