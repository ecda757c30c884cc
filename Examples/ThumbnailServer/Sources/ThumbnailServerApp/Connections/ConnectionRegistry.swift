import NIOCore
import Synchronization

/// Every open connection of the server: counted against ``ConnectionLimits/maxConnections``, its answers' bytes
/// not yet taken by the socket counted against an output budget across all connections, and closed all at once
/// when shutdown's time is up (``closeAll()``).
///
/// The output budget is what bounds the memory clients that never read can pin: bytes written to a connection wait
/// in the server until its socket takes them, so 150 clients that pipeline requests for a 2 MB thumbnail and never
/// read would hold hundreds of MB. When the bytes waiting across all connections pass the budget, the connections
/// whose sockets have been full the longest (clients not reading) are closed, their bytes released, until the total
/// is back under it. Clients that read hold their bytes for milliseconds and are never chosen before a stalled one.
///
/// Beyond the cap, a new connection makes room by closing the connection that has waited longest without owing an
/// answer (idle, or a request still arriving — a slow or half-sent one), so clients that hold connections open
/// without finishing a request can't lock real clients out; when every connection owes an answer, the new one is
/// closed. Thread-safe: one `Mutex`; channels are closed outside it.
public final class ConnectionRegistry: Sendable {
    private struct Entry {
        let channel: any Channel
        var evictable: Bool
        var since: UInt64
        /// Bytes written to it that its socket has not taken yet.
        var pending = 0
        /// When its socket stopped taking writes (nil while it takes them).
        var stalledSince: UInt64?
        var closing = false
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var tick: UInt64 = 0
        var evicted = 0
        var refused = 0
        var pending = 0
        var closedForOutput = 0
    }

    private let state = Mutex(State())
    let maxConnections: Int
    /// The output budget in bytes.
    public let maxPendingOutput: Int

    /// Creates a registry capped at `maxConnections`, with `maxPendingOutput` bytes of answers waiting across all
    /// connections.
    public init(maxConnections: Int, maxPendingOutput: Int = 32 << 20) {
        self.maxConnections = max(1, maxConnections)
        self.maxPendingOutput = max(1 << 20, maxPendingOutput)
    }

    /// Bytes of answers waiting for their sockets now, and connections closed for the output budget so far.
    public var output: (pending: Int, closedForOutput: Int) { state.withLock { ($0.pending, $0.closedForOutput) } }

    /// `bytes` were written to `channel`; over the budget, the longest-stalled connections are closed.
    func wrote(_ channel: any Channel, bytes: Int) {
        let victims = state.withLock { state -> [any Channel] in
            let id = ObjectIdentifier(channel)
            guard state.entries[id] != nil else { return [] }
            state.entries[id]!.pending += bytes
            state.pending += bytes
            guard state.pending > maxPendingOutput else { return [] }
            var excess = state.pending - maxPendingOutput
            var victims: [any Channel] = []
            let stalled = state.entries.filter {
                !$0.value.closing && $0.value.stalledSince != nil && $0.value.pending > 0
            }
            .sorted { $0.value.stalledSince! < $1.value.stalledSince! }
            for (key, entry) in stalled where excess > 0 {
                state.entries[key]!.closing = true
                state.closedForOutput += 1
                excess -= entry.pending
                victims.append(entry.channel)
            }
            return victims
        }
        for victim in victims { victim.close(promise: nil) }
    }

    /// `bytes` written to `channel` were taken by its socket (or dropped as it closed).
    func written(_ channel: any Channel, bytes: Int) {
        state.withLock { state in
            state.pending -= bytes
            let id = ObjectIdentifier(channel)
            if state.entries[id] != nil { state.entries[id]!.pending -= bytes }
        }
    }

    /// Records whether `channel`'s socket takes writes.
    func setStalled(_ channel: any Channel, _ stalled: Bool) {
        state.withLock { state in
            let id = ObjectIdentifier(channel)
            guard state.entries[id] != nil else { return }
            state.tick += 1
            state.entries[id]!.stalledSince = stalled ? (state.entries[id]!.stalledSince ?? state.tick) : nil
        }
    }

    /// Connections open now.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Connections closed to make room, and new ones refused, so far.
    public var evictions: (evicted: Int, refused: Int) { state.withLock { ($0.evicted, $0.refused) } }

    /// Registers `channel`; returns false when it must be closed at once (the cap, and nothing to evict).
    func opened(_ channel: any Channel) -> Bool {
        let (victim, accepted) = state.withLock { state -> ((any Channel)?, Bool) in
            state.tick += 1
            var victim: (any Channel)?
            if state.entries.count >= maxConnections {
                guard
                    let oldest = state.entries.filter({ $0.value.evictable }).min(by: {
                        $0.value.since < $1.value.since
                    })
                else {
                    state.refused += 1
                    return (nil, false)
                }
                state.entries[oldest.key] = nil
                state.evicted += 1
                victim = oldest.value.channel
            }
            state.entries[ObjectIdentifier(channel)] = Entry(channel: channel, evictable: true, since: state.tick)
            return (victim, true)
        }
        victim?.close(promise: nil)
        return accepted
    }

    /// Records whether `channel` may be evicted (see the type).
    func setEvictable(_ channel: any Channel, _ evictable: Bool) {
        state.withLock { state in
            let id = ObjectIdentifier(channel)
            guard state.entries[id] != nil, state.entries[id]!.evictable != evictable else { return }
            state.tick += 1
            state.entries[id]!.evictable = evictable
            state.entries[id]!.since = state.tick
        }
    }

    func closed(_ channel: any Channel) {
        _ = state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Closes every connection (shutdown's time is up: what clients have not read by now, they won't get).
    public func closeAll() {
        let channels = state.withLock { $0.entries.values.map(\.channel) }
        for channel in channels { channel.close(promise: nil) }
    }
}
