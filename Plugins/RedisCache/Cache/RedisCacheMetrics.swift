import Metrics
import Synchronization

/// The cache's swift-metrics instruments, created once per cache with the configured factory.
///
/// Labels (default prefix `webimage_redis`): `_hits_total`, `_misses_total`, `_stores_total`,
/// `_bytes_read_total`, `_bytes_written_total`, `_query_duration` (timer of each query that reached Redis),
/// `_errors_total` with dimension `kind` (`timedOut`, `connectFailed`, `server`, … and `corrupt` for an entry
/// that does not decode), `_skipped_total` (operations not sent because the breaker is open), `_breaker_open`
/// (gauge, 1 while open), `_breaker_opened_total`, `_oversize_total` (stores, and reads of other processes' entries, over
/// the entry cap), and for fleet
/// coalescing `_leases_total` (leases taken: this process fetches), `_coalesced_waits_total` (waits for
/// another process), `_coalesced_hits_total` (waits that ended with its result), `_coalesce_fallbacks_total`
/// (waits that ended in a fetch of our own).
final class RedisCacheMetrics: Sendable {
    let hits: Counter
    let misses: Counter
    let stores: Counter
    let bytesRead: Counter
    let bytesWritten: Counter
    let queryDuration: CoreMetrics.Timer
    let skipped: Counter
    let breakerOpen: Gauge
    let breakerOpened: Counter
    let oversize: Counter
    let leases: Counter
    let coalescedWaits: Counter
    let coalescedHits: Counter
    let coalesceFallbacks: Counter
    private let factory: any MetricsFactory
    private let prefix: String
    private let errors = Mutex<[String: Counter]>([:])

    init(prefix: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        self.prefix = prefix
        func counter(_ name: String) -> Counter { Counter(label: "\(prefix)_\(name)", factory: factory) }
        hits = counter("hits_total")
        misses = counter("misses_total")
        stores = counter("stores_total")
        bytesRead = counter("bytes_read_total")
        bytesWritten = counter("bytes_written_total")
        queryDuration = CoreMetrics.Timer(label: "\(prefix)_query_duration", factory: factory)
        skipped = counter("skipped_total")
        breakerOpen = Gauge(label: "\(prefix)_breaker_open", factory: factory)
        breakerOpened = counter("breaker_opened_total")
        oversize = counter("oversize_total")
        leases = counter("leases_total")
        coalescedWaits = counter("coalesced_waits_total")
        coalescedHits = counter("coalesced_hits_total")
        coalesceFallbacks = counter("coalesce_fallbacks_total")
    }

    func recordError(_ kind: String) {
        let counter = errors.withLock { counters -> Counter in
            if let counter = counters[kind] { return counter }
            let counter = Counter(label: "\(prefix)_errors_total", dimensions: [("kind", kind)], factory: factory)
            counters[kind] = counter
            return counter
        }
        counter.increment()
    }
}
