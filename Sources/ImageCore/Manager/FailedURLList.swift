import Foundation

/// The bounded, expiring list of URLs whose loads failed for good (DESIGN §6).
///
/// A pure value: the manager keeps it behind a lock and passes `now` in, so tests drive time directly.
/// Entries expire after ``ttl``; when more than ``capacity`` URLs are listed, the oldest entry goes.
public struct FailedURLList: Sendable {
    /// What a listed failure judged: what decides which loads it blocks.
    public enum Verdict: Sendable, Hashable {
        /// The transfer failed for good (404, 410, a body over the limit): it blocks every load of the URL.
        case transfer
        /// The bytes arrived but make no image a load could use (undecodable, no coder, over the pixel budget): it
        /// blocks image loads, not a data load (``ImageManager/loadData(with:options:context:)``), which wants the
        /// bytes.
        case content
    }

    private struct Entry: Sendable {
        var added: Date
        var verdict: Verdict
    }

    /// How long a URL stays blocked.
    public var ttl: TimeInterval
    /// The most URLs kept.
    public var capacity: Int
    private var entries: [String: Entry] = [:]
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
        guard let entry = entries[url.absoluteString] else { return false }
        return now.timeIntervalSince(entry.added) < ttl
    }

    /// True when `url` is listed with `verdict` and its entry has not expired at `now`.
    public func contains(_ url: URL, verdict: Verdict, now: Date = Date()) -> Bool {
        guard let entry = entries[url.absoluteString], entry.verdict == verdict else { return false }
        return now.timeIntervalSince(entry.added) < ttl
    }

    /// Lists `url` as failed at `now` for a ``Verdict/transfer`` verdict (it blocks every load), evicting expired
    /// entries and then the oldest beyond capacity.
    public mutating func insert(_ url: URL, now: Date = Date()) {
        insert(url, verdict: .transfer, now: now)
    }

    /// Lists `url` as failed at `now` for `verdict` (the latest verdict replaces an earlier one), evicting expired
    /// entries and then the oldest beyond capacity.
    public mutating func insert(_ url: URL, verdict: Verdict, now: Date = Date()) {
        let key = url.absoluteString
        if entries[key] != nil { order.removeAll { $0 == key } }
        entries[key] = Entry(added: now, verdict: verdict)
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
        guard let first = order.first, let oldest = entries[first], now.timeIntervalSince(oldest.added) >= ttl else {
            return
        }
        order.removeAll { key in
            guard let entry = entries[key], now.timeIntervalSince(entry.added) < ttl else {
                entries.removeValue(forKey: key)
                return true
            }
            return false
        }
    }
}
