import Foundation

/// One store that several `.refreshStale` data loads share: the first to ask writes, the others wait for it, and a
/// late one learns its outcome at once. Each load then ends its claim (``KeptClaim``) when the one write finished.
/// Thread-safe: one lock; nothing is written and no waiter is called under it.
final class SharedStore: Sendable {
    private enum State {
        case idle
        case pending([@Sendable (Bool) -> Void])
        case done(Bool)
    }
    private let state = Locked(State.idle)

    /// Writes with `write` (which calls its argument once, with whether it stored) unless another load did or does;
    /// `then` learns the outcome of the one write.
    func run(then: (@Sendable (Bool) -> Void)?, _ write: (@escaping @Sendable (Bool) -> Void) -> Void) {
        enum Role {
            case writes, waits
            case learns(Bool)
        }
        let role = state.withLock { state -> Role in
            switch state {
            case .idle:
                state = .pending(then.map { [$0] } ?? [])
                return .writes
            case .pending(var waiters):
                if let then { waiters.append(then) }
                state = .pending(waiters)
                return .waits
            case .done(let stored):
                return .learns(stored)
            }
        }
        switch role {
        case .waits: return
        case .learns(let stored): then?(stored)
        case .writes:
            write { stored in
                let waiters = self.state.withLock { state -> [@Sendable (Bool) -> Void] in
                    defer { state = .done(stored) }
                    if case .pending(let waiters) = state { return waiters }
                    return []
                }
                for waiter in waiters { waiter(stored) }
            }
        }
    }
}

/// Where kept bytes are written: the key, the levels, and the cache by identity. Nil for a cache that is not an object
/// (a value has no identity to tell two of them apart), whose stores are never shared.
struct KeptTarget: Hashable, Sendable {
    let key: String
    let levels: ImageCacheType.RawValue
    let cache: ObjectIdentifier

    init?(_ place: DataPlace) {
        guard type(of: place.cache) is AnyClass else { return nil }
        key = place.key
        levels = place.storeLevels.rawValue
        cache = ObjectIdentifier(place.cache as AnyObject)
    }
}

/// The renewals of kept entries: the loads that revalidated one stored entry (the same stored facts) and got its 304
/// renew it once. A renewal is remembered for ``window`` after it began, long enough for every load that read the
/// entry before it was renewed to get its answer; the entry it writes has new facts, so a later revalidation is not
/// mistaken for it. (The stores of one transfer are shared through its job: ``FetchJob/keptStore(for:)``.)
///
/// Thread-safe: one lock, held only to find or add an entry.
final class KeptRenewals: Sendable {
    private struct Renewal: Hashable, Sendable {
        let target: KeptTarget
        let storedAt: Date?
        let etag: String?
        let lastModified: String?
    }
    static let window: Duration = .seconds(10)
    private let renewals = Locked<[Renewal: (store: SharedStore, began: ContinuousClock.Instant)]>([:])

    /// The shared store of the renewal of the entry with `metadata` in `target`.
    func store(for target: KeptTarget, renewing metadata: CacheEntryMetadata?) -> SharedStore {
        let renewal = Renewal(
            target: target, storedAt: metadata?.storedAt, etag: metadata?.etag, lastModified: metadata?.lastModified)
        let now = ContinuousClock.now
        return renewals.withLock { table in
            table = table.filter { now - $0.value.began < Self.window }
            if let running = table[renewal] { return running.store }
            let store = SharedStore()
            table[renewal] = (store, now)
            return store
        }
    }
}
