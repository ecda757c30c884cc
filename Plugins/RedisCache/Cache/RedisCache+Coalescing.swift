import Foundation
import ImageCore
import NIOCore

/// Fleet-wide coalescing: one process per missing key fetches, the others wait for its entry.
extension RedisCache {
    /// After a miss: take the lease and fetch (``Lookup/miss``), or wait for the holder's entry.
    ///
    /// The lease value is this cache's token, so loads of this process that find their own lease return a miss
    /// at once and meet the running download in the manager's own coalescing. A waiter that sees the lease gone
    /// with no entry (the holder failed, or died and the lease expired) tries to take it over; one that waits
    /// longer than `maxWait` fetches anyway. Every Redis failure on the way ends the wait with a miss.
    func coalesce(
        _ key: String, keys: RedisKeys, settings: RedisCacheConfiguration.FleetCoalescing
    ) async -> Lookup {
        switch await takeLease(keys, settings: settings) {
        case .taken, .ours, .failed:
            return .miss
        case .heldByAnother:
            break
        }
        metrics.coalescedWaits.increment()
        let deadline = clock() + settings.maxWait
        var interval = settings.pollInterval.lowerBound
        while clock() < deadline {
            do {
                try await Task.sleep(nanoseconds: UInt64(min(interval, max(0, deadline - clock())) * 1e9))
            } catch {
                return .miss  // cancelled: the query completes with `cancelled` anyway
            }
            interval = min(interval * 2, settings.pollInterval.upperBound)
            let replies = await guarded("GET") { () async throws(RedisClientError) in
                try await executor.send([.get(keys.entry), .get(keys.lease)], routingKey: keys.entry)
            }
            guard let replies, replies.count == 2 else { break }
            if let hit = entry(from: replies[0], key: key) {
                metrics.coalescedHits.increment()
                return hit
            }
            if replies[1].isNull {
                // The holder is gone without an entry: take over, or wait for whoever did.
                switch await takeLease(keys, settings: settings) {
                case .taken, .ours, .failed:
                    metrics.coalesceFallbacks.increment()
                    return .miss
                case .heldByAnother:
                    continue
                }
            }
        }
        metrics.coalesceFallbacks.increment()
        return .miss
    }

    enum LeaseOutcome {
        /// This cache took the lease: fetch.
        case taken
        /// This cache already holds it (another load of this process is fetching).
        case ours
        /// Another process holds it: wait.
        case heldByAnother
        /// Redis failed: fetch.
        case failed
    }

    /// `SET lease token NX PX ms` and `GET lease` in one round trip.
    private func takeLease(_ keys: RedisKeys, settings: RedisCacheConfiguration.FleetCoalescing) async -> LeaseOutcome {
        let milliseconds = Int64(max(1, settings.leaseDuration * 1000))
        let commands: [RedisCommand] = [
            .set(keys.lease, ByteBuffer(string: leaseToken), milliseconds: milliseconds, onlyIfAbsent: true),
            .get(keys.lease),
        ]
        let replies = await guarded("SET NX") { () async throws(RedisClientError) in
            let replies = try await executor.send(commands, routingKey: keys.entry)
            _ = try Self.check(replies.first ?? .null)
            return replies
        }
        guard let replies, replies.count == 2 else { return .failed }
        if replies[0].string == "OK" {
            metrics.leases.increment()
            return .taken
        }
        return replies[1].string == leaseToken ? .ours : .heldByAnother
    }
}
