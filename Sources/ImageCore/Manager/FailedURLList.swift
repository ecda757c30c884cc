import Foundation

/// The bounded, expiring list of URLs whose loads failed for good (DESIGN §6).
///
/// A pure value: the manager keeps it behind a lock and passes `now` in, so tests drive time directly.
/// Entries expire after ``ttl``; when more than ``capacity`` URLs are listed, the oldest entry goes.
public struct FailedURLList: Sendable {
    /// How long a URL stays blocked.
    public var ttl: TimeInterval
    /// The most URLs kept.
    public var capacity: Int
    private var entries: [String: Date] = [:]
    private var order: [String] = []

    /// Creates an empty list.
    public init(ttl: TimeInterval = 3600, capacity: Int = 1000) {
        self.ttl = ttl
        self.capacity = max(1, capacity)
    }

    /// Number of URLs listed (expired ones included until the next mutation).
    public var count: Int { entries.count }

    /// True when `url` is listed and its entry has not expired at `now`.
    public func contains(_ url: URL, now: Date = Date()) -> Bool {
        guard let added = entries[url.absoluteString] else { return false }
        return now.timeIntervalSince(added) < ttl
    }

    /// Lists `url` as failed at `now`, evicting expired entries and then the oldest beyond capacity.
    public mutating func insert(_ url: URL, now: Date = Date()) {
        let key = url.absoluteString
        if entries[key] != nil { order.removeAll { $0 == key } }
        entries[key] = now
        order.append(key)
        removeExpired(now: now)
        while order.count > capacity {
            entries.removeValue(forKey: order.removeFirst())
        }
    }

    /// Unlists `url`.
    public mutating func remove(_ url: URL) {
        let key = url.absoluteString
        if entries.removeValue(forKey: key) != nil { order.removeAll { $0 == key } }
    }

    /// Unlists every URL.
    public mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
    }

    /// Drops entries older than the TTL.
    public mutating func removeExpired(now: Date = Date()) {
        guard let first = order.first, let added = entries[first], now.timeIntervalSince(added) >= ttl else { return }
        order.removeAll { key in
            guard let added = entries[key], now.timeIntervalSince(added) < ttl else {
                entries.removeValue(forKey: key)
                return true
            }
            return false
        }
    }
}
