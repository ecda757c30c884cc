import Dispatch
import Metrics

/// The service's metrics through swift-metrics, named `<prefix>_…` (``ImageServiceConfiguration/metricsPrefix``).
///
/// - `_requests_total{status, format}`: answered requests by status and output format (`none` for errors).
/// - `_cache_hits_total{kind, level}`, `_cache_misses_total{kind}`: lookups of results and sources by the level that
///   answered (`memory`, `disk`, `redis`); `_coalesced_total{kind}`: requests that joined a running result (`kind`
///   `result`; a source's transfer is shared inside `ImageManager`, which does not count joins).
/// - `_origin_requests_total` (each hop), `_revalidations_total{outcome}` (`not_modified`, `changed`),
///   `_policy_refusals_total{where}` (`request`, `cache`: a cached answer the current policy refuses),
///   `_incomplete_sources_total` (sources whose bytes ended before their image: answered, kept nowhere).
/// - Timers `_origin_seconds`, `_decode_seconds`, `_resize_seconds`, `_encode_seconds`, `_store_seconds` (a
///   Prometheus backend shows them as histograms whose `_count` is how often the stage ran).
/// - `_not_modified_total`, `_rejected_total{reason}` (`queue_full`, `deadline`).
/// - Gauges: `_queue_depth`, `_in_flight` (work holding a worker), `_origin_in_flight` (origin transfers running),
///   `_http_in_flight` (requests being answered).
///
/// Thread-safe (the handlers are the backend's).
final class ServiceMetrics: Sendable {
    let prefix: String
    let factory: any MetricsFactory
    let originRequests: Counter
    let notModified: Counter
    let originSeconds: Timer
    let decodeSeconds: Timer
    let resizeSeconds: Timer
    let encodeSeconds: Timer
    let storeSeconds: Timer
    let queueDepth: Gauge
    let inFlight: Gauge
    let originInFlight: Meter
    let httpInFlight: Meter

    init(prefix: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.prefix = prefix
        self.factory = factory
        originRequests = Counter(label: "\(prefix)_origin_requests_total", factory: factory)
        notModified = Counter(label: "\(prefix)_not_modified_total", factory: factory)
        func timer(_ stage: String) -> Timer {
            Timer(label: "\(prefix)_\(stage)_seconds", preferredDisplayUnit: .seconds, factory: factory)
        }
        originSeconds = timer("origin")
        decodeSeconds = timer("decode")
        resizeSeconds = timer("resize")
        encodeSeconds = timer("encode")
        storeSeconds = timer("store")
        queueDepth = Gauge(label: "\(prefix)_queue_depth", factory: factory)
        inFlight = Gauge(label: "\(prefix)_in_flight", factory: factory)
        originInFlight = Meter(label: "\(prefix)_origin_in_flight", factory: factory)
        httpInFlight = Meter(label: "\(prefix)_http_in_flight", factory: factory)
        // Created at start so a scrape shows them at 0 before the first event.
        originInFlight.set(0)
        httpInFlight.set(0)
        queueDepth.record(0)
        inFlight.record(0)
    }

    func request(status: Int, format: String) {
        counter("requests_total", [("status", String(status)), ("format", format)]).increment()
    }

    func cacheHit(kind: CacheKind, level: CacheLevel) {
        counter("cache_hits_total", [("kind", kind.rawValue), ("level", level.rawValue)]).increment()
    }

    func cacheMiss(kind: CacheKind) { counter("cache_misses_total", [("kind", kind.rawValue)]).increment() }

    func coalesced(kind: CacheKind) { counter("coalesced_total", [("kind", kind.rawValue)]).increment() }

    func rejected(_ reason: String) { counter("rejected_total", [("reason", reason)]).increment() }

    func revalidated(changed: Bool) {
        counter("revalidations_total", [("outcome", changed ? "changed" : "not_modified")]).increment()
    }

    /// A source whose bytes ended before its image: answered, not kept (see ``ImageService``'s `make`).
    func incompleteSource() { counter("incomplete_sources_total", []).increment() }

    func policyRefusal(cached: Bool) {
        counter("policy_refusals_total", [("where", cached ? "cache" : "request")]).increment()
    }

    private func counter(_ name: String, _ dimensions: [(String, String)]) -> Counter {
        Counter(label: "\(prefix)_\(name)", dimensions: dimensions, factory: factory)
    }

    /// Records the time since `start` on `timer`.
    static func record(_ timer: Timer, since start: DispatchTime) {
        timer.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds))
    }
}

/// Which cache a lookup was in.
enum CacheKind: String, Sendable {
    case result
    case source
}

/// Which level answered.
enum CacheLevel: String, Sendable {
    case memory
    case disk
    case redis
}
