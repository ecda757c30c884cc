import NIOCore
import Synchronization

/// Commands written together, answered together: one promise for all their replies, in order.
struct RedisRequest: Sendable {
    let commands: [RedisCommand]
    let timeout: TimeAmount
    let promise: EventLoopPromise<[RESPValue]>
}

/// Turns received bytes into ``RESPValue``s with the pure ``RESPDecoder``.
struct RESPByteDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    let decoder: RESPDecoder

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try decoder.decode(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        // A value cut off by the close is dropped: its command fails with `connectionClosed`.
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Commands waiting for replies, shared with ``RedisConnection`` so the pool can balance without hopping.
final class RedisConnectionLoad: Sendable {
    private let pending = Atomic<Int>(0)
    var value: Int { pending.load(ordering: .relaxed) }
    func add(_ delta: Int) { pending.add(delta, ordering: .relaxed) }
}

/// The thin shell around ``RedisConnectionStateMachine``: confined to the channel's event loop, it feeds the
/// machine the channel's events and performs its actions (writes, replies, failures, close, timers).
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    /// The replies of one request, filled in as they arrive.
    private final class Batch {
        let promise: EventLoopPromise<[RESPValue]>
        var values: [RESPValue?]
        var remaining: Int
        var timer: Scheduled<Void>?

        init(promise: EventLoopPromise<[RESPValue]>, count: Int) {
            self.promise = promise
            self.values = Array(repeating: nil, count: count)
            self.remaining = count
        }
    }

    private struct Entry {
        let command: RedisCommand
        let batch: Batch
        let index: Int
    }

    private var machine: RedisConnectionStateMachine
    private var entries: [RedisConnectionStateMachine.ID: Entry] = [:]
    private var nextID: RedisConnectionStateMachine.ID = 0
    private var context: ChannelHandlerContext?
    private var handshakeTimer: Scheduled<Void>?
    private var readyCompleted = false
    private let connectTimeout: TimeAmount
    private let load: RedisConnectionLoad
    /// Succeeds with the protocol version when the handshake ends; fails if it cannot.
    let ready: EventLoopPromise<Int>

    init(
        handshake: RedisConnectionStateMachine.Handshake, connectTimeout: TimeAmount, load: RedisConnectionLoad,
        ready: EventLoopPromise<Int>
    ) {
        self.machine = RedisConnectionStateMachine(handshake: handshake)
        self.connectTimeout = connectTimeout
        self.load = load
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loop = context.eventLoop.assumeIsolated()
        handshakeTimer = loop.scheduleTask(in: connectTimeout) { [self] in
            if !machine.isReady { perform(machine.timedOut(nil)) }
        }
        if context.channel.isActive { perform(machine.channelActive()) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        perform(machine.channelInactive(RedisClientError(.connectionClosed, "handler removed")))
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        perform(machine.channelActive())
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        perform(machine.channelInactive(nil))
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        perform(machine.received(unwrapInboundIn(data)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let decoding = error as? RESPDecodingError {
            perform(machine.decodingFailed(decoding))
        } else {
            perform(machine.channelInactive(RedisClientError(.connectionClosed, "\(error)")))
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        promise?.succeed()
        guard !request.commands.isEmpty else { return request.promise.succeed([]) }
        let batch = Batch(promise: request.promise, count: request.commands.count)
        var ids: [RedisConnectionStateMachine.ID] = []
        for (index, command) in request.commands.enumerated() {
            nextID += 1
            entries[nextID] = Entry(command: command, batch: batch, index: index)
            ids.append(nextID)
        }
        load.add(ids.count)
        // Replies come in order, so the batch is late exactly when its last reply is: watching the first would let a
        // server that answers only part of a pipeline hold the rest for ever.
        let last = ids[ids.count - 1]
        batch.timer = context.eventLoop.assumeIsolated().scheduleTask(in: request.timeout) { [self] in
            perform(machine.timedOut(last))
        }
        for id in ids { perform(machine.enqueue(id), flush: false) }
        context.flush()
    }

    // MARK: Actions

    private func perform(_ action: RedisConnectionStateMachine.Action, flush: Bool = true) {
        guard let context else {
            if case .fail(let ids, let error, _) = action {
                if !readyCompleted {
                    readyCompleted = true
                    ready.fail(error)
                }
                fail(ids, error)
            }
            return
        }
        switch action {
        case .none:
            break
        case .write(let ids):
            writeCommands(ids, context: context)
            if flush { context.flush() }
        case .writeHandshake(let command):
            var buffer = context.channel.allocator.buffer(capacity: 64)
            command.encode(into: &buffer)
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        case .ready(let version, let ids):
            handshakeTimer?.cancel()
            handshakeTimer = nil
            readyCompleted = true
            ready.succeed(version)
            writeCommands(ids, context: context)
            context.flush()
        case .succeed(let id, let value):
            guard let entry = entries.removeValue(forKey: id) else { return }
            load.add(-1)
            let batch = entry.batch
            batch.values[entry.index] = value
            batch.remaining -= 1
            if batch.remaining == 0 {
                batch.timer?.cancel()
                batch.promise.succeed(batch.values.map { $0 ?? .null })
            }
        case .fail(let ids, let error, let close):
            handshakeTimer?.cancel()
            handshakeTimer = nil
            if !readyCompleted {
                readyCompleted = true
                ready.fail(error)
            }
            fail(ids, error)
            if close { context.close(promise: nil) }
        }
    }

    private func writeCommands(_ ids: [RedisConnectionStateMachine.ID], context: ChannelHandlerContext) {
        guard !ids.isEmpty else { return }
        var buffer = context.channel.allocator.buffer(capacity: 256)
        for id in ids { entries[id]?.command.encode(into: &buffer) }
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    private func fail(_ ids: [RedisConnectionStateMachine.ID], _ error: RedisClientError) {
        for id in ids {
            guard let entry = entries.removeValue(forKey: id) else { continue }
            load.add(-1)
            entry.batch.timer?.cancel()
            // The first failure completes the batch; later ids of it find the promise already done.
            if entry.batch.remaining > 0 {
                entry.batch.remaining = 0
                entry.batch.promise.fail(error)
            }
        }
    }
}
