import Synchronization

/// The counters `/metrics` shows, in the Prometheus text format. Thread-safe (one `Mutex`).
public final class ServerCounters: Sendable {
    /// One counter.
    public enum Counter: String, CaseIterable, Sendable {
        /// `/thumbnail` requests received.
        case requests = "thumbnail_requests_total"
        /// Thumbnails whose image came from the memory or disk cache.
        case cacheHits = "thumbnail_cache_hits_total"
        /// Thumbnails whose source had to be downloaded.
        case cacheMisses = "thumbnail_cache_misses_total"
        /// `304 Not Modified` answers to `If-None-Match`.
        case notModified = "thumbnail_not_modified_total"
        /// `/thumbnail` requests answered with an error status.
        case errors = "thumbnail_errors_total"
        /// Requests refused because the source origin is not allowed (also counted in errors).
        case forbidden = "thumbnail_forbidden_total"
        /// Sample images served under `/samples/` (each one is an origin download).
        case samplesServed = "samples_served_total"
    }

    private let values = Mutex([Counter: Int]())

    public init() {}

    func increment(_ counter: Counter) { values.withLock { $0[counter, default: 0] += 1 } }

    /// The current value of `counter`.
    public func value(_ counter: Counter) -> Int { values.withLock { $0[counter, default: 0] } }

    /// `name value` lines, one per counter.
    public var text: String {
        let snapshot = values.withLock { $0 }
        return Counter.allCases.map { "\($0.rawValue) \(snapshot[$0, default: 0])\n" }.joined()
    }
}
