import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// The limits of one connection (``ConnectionLimits``) applied by two channel handlers that share one
/// ``ConnectionGuardState``: ``ByteGuard`` at the front of the pipeline (raw bytes: the first byte of a request,
/// writes completing, writability, and reads held back while the client doesn't read its answers) and
/// ``RequestGuard`` after the HTTP codec (a request's head and end, an answer's end). One timer per connection, set
/// for the state's next deadline (``ConnectionGuardState/nextDeadline``) and moved only when an event brings it
/// closer, closes the connection when a limit passed: a thousand idle connections cost a thousand timers a minute,
/// not four thousand wake-ups a second.
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
    private var timer: Scheduled<Void>?
    private var timerDeadline = Double.infinity
    private var stopped = false
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
        changed()
        return true
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        timer?.cancel()
        timer = nil
        if let channel { registry.closed(channel) }
    }

    /// After an event: tells the registry whether the connection may be evicted, and brings the timer closer when
    /// the state's next deadline moved before it.
    func changed() {
        guard !stopped, let channel else { return }
        registry.setEvictable(channel, state.isEvictable)
        guard let deadline = state.nextDeadline, deadline < timerDeadline else { return }
        schedule(at: deadline, on: channel)
    }

    private func schedule(at deadline: Double, on channel: any Channel) {
        timer?.cancel()
        timerDeadline = deadline
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        let delay = max(0, deadline - Self.now) + 0.01
        timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { bound.value.fire() }
    }

    private func fire() {
        timer = nil
        timerDeadline = .infinity
        guard !stopped, let channel else { return }
        if case .close(let reason) = state.verdict(now: Self.now) {
            logger.debug("closing a connection", metadata: ["reason": .string(reason)])
            channel.close(promise: nil)
        } else if let deadline = state.nextDeadline {
            schedule(at: deadline, on: channel)
        }
    }
}

/// The raw-byte half of ``ConnectionGuard`` (first in the pipeline).
final class ByteGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

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

    /// Marks write progress (the write timeout counts from the last write the socket took).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let done = promise ?? context.eventLoop.makePromise()
        let bound = NIOLoopBound(guarding, eventLoop: context.eventLoop)
        done.futureResult.whenSuccess { bound.value.state.writeCompleted(now: ConnectionGuard.now) }
        context.write(data, promise: done)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        guarding.state.writabilityChanged(writable, now: ConnectionGuard.now)
        guarding.changed()
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
        case .head:
            guarding.state.headRead(now: ConnectionGuard.now)
            if guarding.state.isOverPipelined {
                guarding.logger.debug("closing a connection: too many pipelined requests")
                context.close(promise: nil)
                return
            }
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
