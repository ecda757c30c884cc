import Foundation
import ImageCore
import NIOCore

/// Fleet-wide coalescing: one process per missing key fetches, the others wait for its entry.
///
/// The lease (`<entry>:lease`) holds the token of the process that fetches. It has one owner and always ends:
/// the owner's store deletes it; when the fetch ends without a store the manager reports the miss ended
/// (``ImageCore/ImageCacheProtocol/missEnded(forKey:cacheType:outcome:)``) and the owner — only the owner, by a
/// compare-and-delete on its token — either deletes it (cancelled or a transient failure: a waiter takes the
/// fetch over) or turns it into the "nothing to share" mark for
/// ``RedisCacheConfiguration/FleetCoalescing/notStoredMarkerDuration`` (a 404, `no-store`, an entry over the cap,
/// undecodable bytes: every waiter stops at its next poll and fetches for itself). A dead owner's lease expires
/// after ``RedisCacheConfiguration/FleetCoalescing/leaseDuration``.
extension RedisCache {
    /// A lease value that marks "fetched, nothing to share": it starts with this, which no token does.
    static let notStoredMark = "!not-stored:"

    /// After a miss: take the lease and fetch (``Lookup/miss``), or wait for the holder's entry.
    ///
    /// The lease value is this cache's token, so loads of this process that find their own lease return a miss
    /// at once and meet the running download in the manager's own coalescing. A waiter that sees the lease gone
    /// with no entry (the holder gave up, or died and the lease expired) tries to take it over; one that sees the
    /// "nothing to share" mark, or waits longer than `maxWait`, fetches itself. Every Redis failure on the way
    /// ends the wait with a miss.
    func coalesce(
        _ key: String, keys: RedisKeys, settings: RedisCacheConfiguration.FleetCoalescing
    ) async -> Lookup {
        switch await takeLease(keys, settings: settings) {
        case .taken:
            return .leased
        case .ours, .failed:
            return .miss
        case .notStored:
            metrics.coalesceFallbacks.increment()
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
                try await executor.send(readCommands(keys) + [.get(keys.lease)], routingKey: keys.entry)
            }
            guard let replies, replies.count == 3 else { break }
            if let hit = entry(length: replies[0], prefix: replies[1], key: key) {
                metrics.coalescedHits.increment()
                return hit
            }
            if let lease = replies[2].string, lease.hasPrefix(Self.notStoredMark) {
                break  // the holder's fetch ended with nothing to share: fetch now
            }
            if replies[2].isNull {
                // The holder is gone without an entry: take over, or wait for whoever did.
                switch await takeLease(keys, settings: settings) {
                case .taken:
                    metrics.coalesceFallbacks.increment()
                    return .leased
                case .ours, .failed, .notStored:
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
        /// Another process's fetch just ended with nothing to share: fetch, don't wait.
        case notStored
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
            heldLeases.withLock { _ = $0.insert(keys.lease) }
            metrics.leases.increment()
            return .taken
        }
        guard let holder = replies[1].string else { return .heldByAnother }
        if holder == leaseToken { return .ours }
        return holder.hasPrefix(Self.notStoredMark) ? .notStored : .heldByAnother
    }

    /// Ends the lease of `keys` if this process holds it: deletes it, or (``CacheMissOutcome/notStored``) replaces
    /// it with the "nothing to share" mark — both only while it still holds this process's token, so a lease
    /// another process took over is never touched. One round trip, none when this process holds no lease.
    func endLease(_ keys: RedisKeys, outcome: CacheMissOutcome) async {
        guard let settings = configuration.fleetCoalescing,
            heldLeases.withLock({ $0.remove(keys.lease) }) != nil
        else { return }
        let command: RedisCommand
        switch outcome {
        case .stored, .abandoned:
            command = .eval(Self.compareAndDelete, key: keys.lease, [leaseToken])
        case .notStored:
            let milliseconds = Int64(max(1, settings.notStoredMarkerDuration * 1000))
            command = .eval(
                Self.compareAndMark, key: keys.lease,
                [leaseToken, Self.notStoredMark + leaseToken, String(milliseconds)])
        }
        _ = await guarded("EVAL") { () async throws(RedisClientError) in
            try Self.check(try await executor.send([command], routingKey: keys.entry).first ?? .null)
        }
    }

    /// Deletes KEYS[1] if it holds ARGV[1].
    static let compareAndDelete = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
        """

    /// Sets KEYS[1] to ARGV[2] for ARGV[3] ms if it holds ARGV[1].
    static let compareAndMark = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then \
        return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else return 0 end
        """
}
