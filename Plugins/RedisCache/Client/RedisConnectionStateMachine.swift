/// The life of one Redis connection as a pure state machine: handshake, pipelined commands, failure.
///
/// No I/O, no clock, no locks: the connection's channel handler (its thin shell, confined to the channel's event
/// loop) feeds it events and performs the action each one returns. Commands are known by ids; the shell keeps
/// the command bytes and promises.
///
/// - Handshake, one step at a time: `HELLO 3` (with `AUTH` and `SETNAME` in it) when RESP3 is wanted, falling
///   back to RESP2 with a separate `AUTH` when the server has no `HELLO` (before Redis 6) or refuses protocol 3;
///   then `SELECT` for a database other than 0. Commands submitted meanwhile wait and are written when it ends.
/// - Ready: every command is written at once (pipelining) and its id queued; replies complete ids in order.
///   RESP3 pushes are not replies and are skipped.
/// - Any failure (refused handshake, a reply nobody waits for, bad bytes, a timeout, the channel closing) fails
///   every waiting id and closes: after a timeout the replies can no longer be matched to commands.
struct RedisConnectionStateMachine {
    typealias ID = UInt64

    /// What the handshake needs to know.
    struct Handshake: Sendable, Hashable {
        var username: String?
        var password: String?
        var database = 0
        var preferRESP3 = true
        var clientName: String?
    }

    enum Step: Sendable, Hashable {
        case hello
        case auth
        case select
    }

    enum State: Sendable {
        case connecting(queued: [ID])
        case handshaking(Step, queued: [ID])
        case ready(FIFO)
        case closed(RedisClientError)
    }

    enum Action: Sendable, Equatable {
        /// Nothing to do.
        case none
        /// Write (and flush) these user commands.
        case write([ID])
        /// Write this handshake command.
        case writeHandshake(RedisCommand)
        /// The handshake finished (with this protocol version); write the waiting commands.
        case ready(protocolVersion: Int, write: [ID])
        /// Complete `id` with the reply (which may be a server error reply: the caller decides).
        case succeed(ID, RESPValue)
        /// Fail these ids (possibly none) with the error, and close the channel if `close`.
        case fail([ID], RedisClientError, close: Bool)
    }

    /// A FIFO of ids with O(1) amortized push and pop.
    struct FIFO: Sendable, Equatable {
        private var storage: [ID] = []
        private var head = 0

        var isEmpty: Bool { head == storage.count }
        var count: Int { storage.count - head }
        var all: [ID] { Array(storage[head...]) }

        mutating func push(_ id: ID) { storage.append(id) }

        mutating func pop() -> ID? {
            guard head < storage.count else { return nil }
            let id = storage[head]
            head += 1
            if head > 64 && head * 2 > storage.count {
                storage.removeFirst(head)
                head = 0
            }
            return id
        }

        func contains(_ id: ID) -> Bool { storage[head...].contains(id) }
    }

    private(set) var state: State = .connecting(queued: [])
    let handshake: Handshake
    /// 3 after a successful `HELLO 3`, else 2.
    private(set) var protocolVersion = 2

    init(handshake: Handshake) { self.handshake = handshake }

    /// Ids waiting for a reply or for the handshake to end.
    var pendingCount: Int {
        switch state {
        case .connecting(let queued), .handshaking(_, let queued): queued.count
        case .ready(let fifo): fifo.count
        case .closed: 0
        }
    }

    var isReady: Bool {
        if case .ready = state { return true }
        return false
    }

    // MARK: Events

    /// The transport is up (TCP connected, TLS handshake done).
    mutating func channelActive() -> Action {
        guard case .connecting(let queued) = state else { return .none }
        return advance(after: nil, queued: queued)
    }

    /// A user command wants to go out.
    mutating func enqueue(_ id: ID) -> Action {
        switch state {
        case .connecting(var queued):
            queued.append(id)
            state = .connecting(queued: queued)
            return .none
        case .handshaking(let step, var queued):
            queued.append(id)
            state = .handshaking(step, queued: queued)
            return .none
        case .ready(var fifo):
            fifo.push(id)
            state = .ready(fifo)
            return .write([id])
        case .closed(let error):
            return .fail([id], error, close: false)
        }
    }

    /// A whole value arrived.
    mutating func received(_ value: RESPValue) -> Action {
        if case .push = value { return .none }
        switch state {
        case .connecting:
            return close(RedisClientError(.protocolViolation, "a reply before the connection was up"))
        case .handshaking(let step, let queued):
            return handshakeReply(value, step: step, queued: queued)
        case .ready(var fifo):
            guard let id = fifo.pop() else {
                return close(RedisClientError(.protocolViolation, "a reply with no command waiting"))
            }
            state = .ready(fifo)
            return .succeed(id, value)
        case .closed:
            return .none
        }
    }

    /// The command `id` (or the handshake, with nil) did not get its reply in time.
    mutating func timedOut(_ id: ID?) -> Action {
        switch state {
        case .closed:
            return .none
        case .ready(let fifo):
            guard let id, fifo.contains(id) else { return .none }
            return close(RedisClientError(.timedOut, "no reply within the command timeout"))
        case .connecting(let queued), .handshaking(_, let queued):
            if let id, !queued.contains(id) { return .none }
            return close(RedisClientError(.timedOut, "connection not ready within the connect timeout"))
        }
    }

    /// The bytes could not be decoded.
    mutating func decodingFailed(_ error: RESPDecodingError) -> Action {
        close(RedisClientError(.protocolViolation, error.description))
    }

    /// The channel closed (by the peer, an error, or us).
    mutating func channelInactive(_ error: RedisClientError?) -> Action {
        if case .closed = state { return .none }
        let action = close(error ?? RedisClientError(.connectionClosed, "connection closed"))
        if case .fail(let ids, let error, _) = action { return .fail(ids, error, close: false) }
        return action
    }

    /// The owner closes the connection.
    mutating func closeRequested() -> Action {
        close(RedisClientError(.unavailable, "connection closed by the client"))
    }

    // MARK: Handshake

    private mutating func handshakeReply(_ value: RESPValue, step: Step, queued: [ID]) -> Action {
        if case .error(let message) = value {
            let code = message.split(separator: " ", maxSplits: 1).first.map { $0.uppercased() } ?? ""
            // No HELLO (Redis < 6: "ERR unknown command") or no RESP3 ("NOPROTO"): carry on in RESP2.
            if step == .hello, code == "NOPROTO" || message.lowercased().contains("unknown command") {
                protocolVersion = 2
                return advance(after: .hello, queued: queued, helloFailed: true)
            }
            return close(RedisClientError(.handshakeFailed, "\(step): \(message)"))
        }
        if step == .hello { protocolVersion = 3 }
        return advance(after: step, queued: queued)
    }

    /// The next handshake step after `done` (nil: the transport just came up), or ready.
    private mutating func advance(after done: Step?, queued: [ID], helloFailed: Bool = false) -> Action {
        let needsAuth = handshake.password != nil
        var next: Step?
        switch done {
        case nil:
            next = handshake.preferRESP3 ? .hello : needsAuth ? .auth : handshake.database != 0 ? .select : nil
        case .hello:
            // A successful HELLO carried AUTH already.
            next = helloFailed && needsAuth ? .auth : handshake.database != 0 ? .select : nil
        case .auth:
            next = handshake.database != 0 ? .select : nil
        case .select:
            next = nil
        }
        guard let next else {
            var fifo = FIFO()
            for id in queued { fifo.push(id) }
            state = .ready(fifo)
            return .ready(protocolVersion: protocolVersion, write: queued)
        }
        state = .handshaking(next, queued: queued)
        return .writeHandshake(command(for: next))
    }

    private func command(for step: Step) -> RedisCommand {
        switch step {
        case .hello:
            var arguments = ["HELLO", "3"]
            if let password = handshake.password {
                arguments += ["AUTH", handshake.username ?? "default", password]
            }
            if let name = handshake.clientName { arguments += ["SETNAME", name] }
            return RedisCommand(arguments)
        case .auth:
            return RedisCommand(["AUTH"] + [handshake.username, handshake.password].compactMap { $0 })
        case .select:
            return RedisCommand(["SELECT", String(handshake.database)])
        }
    }

    private mutating func close(_ error: RedisClientError) -> Action {
        let ids: [ID]
        switch state {
        case .closed: return .none
        case .connecting(let queued), .handshaking(_, let queued): ids = queued
        case .ready(let fifo): ids = fifo.all
        }
        state = .closed(error)
        return .fail(ids, error, close: true)
    }
}
