import NIOCore
import Synchronization

/// Every open connection of the server: counted against ``ConnectionLimits/maxConnections``, and closed all at
/// once when shutdown's time is up (``closeAll()``).
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
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var tick: UInt64 = 0
        var evicted = 0
        var refused = 0
    }

    private let state = Mutex(State())
    let maxConnections: Int

    /// Creates a registry capped at `maxConnections`.
    public init(maxConnections: Int) {
        self.maxConnections = max(1, maxConnections)
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
