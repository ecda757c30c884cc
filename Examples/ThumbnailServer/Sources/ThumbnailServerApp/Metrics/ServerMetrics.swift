import Foundation
import Prometheus

/// The server's Prometheus metrics, in a registry of its own (so several servers in one process, as in the
/// tests, never share counts); the SDK's loaders and caches report into the same registry.
///
/// Names (all under `thumbnail_`, seconds and bytes as units):
/// - `thumbnail_requests_total{status, format}`: answered `/thumbnail` requests by status and output format.
/// - `thumbnail_cache_hits_total{kind, level}`, `thumbnail_cache_misses_total{kind}`: lookups of results and of
///   sources, by the level that answered (`memory`, `disk`, `redis`); a miss missed every level.
/// - `thumbnail_coalesced_total{kind}`: requests that joined work already running for the same result or source.
/// - `thumbnail_origin_requests_total`, and `thumbnail_origin_seconds`, `thumbnail_decode_seconds`,
///   `thumbnail_resize_seconds`, `thumbnail_encode_seconds`, `thumbnail_store_seconds` histograms: each stage's
///   time (a histogram's `_count` is how often the stage ran).
/// - `thumbnail_not_modified_total`, `thumbnail_rejected_total{reason}` (`queue_full`, `deadline`).
/// - Gauges: `thumbnail_queue_depth` (work waiting for a worker), `thumbnail_in_flight` (work holding one),
///   `thumbnail_http_in_flight` (requests being answered), `process_resident_memory_bytes` (read at scrape).
///
/// Thread-safe (the registry locks).
public final class ServerMetrics: Sendable {
    /// The registry everything is in; `/metrics` on the metrics port renders it.
    public let registry: PrometheusCollectorRegistry

    let originRequests: Counter
    let notModified: Counter
    let samplesServed: Counter
    let originSeconds: DurationHistogram
    let decodeSeconds: DurationHistogram
    let resizeSeconds: DurationHistogram
    let encodeSeconds: DurationHistogram
    let storeSeconds: DurationHistogram
    let queueDepth: Gauge
    let inFlight: Gauge
    let httpInFlight: Gauge
    let residentMemory: Gauge

    static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
        .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(500), .seconds(1), .seconds(2),
        .seconds(5), .seconds(10),
    ]

    /// Creates the metrics in a new registry.
    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        originRequests = registry.makeCounter(
            descriptor: Self.name(
                "thumbnail_origin_requests_total", "Requests sent to source origins (each redirect hop)"))
        notModified = registry.makeCounter(descriptor: Self.name("thumbnail_not_modified_total", "304 answers"))
        samplesServed = registry.makeCounter(
            descriptor: Self.name("thumbnail_samples_served_total", "Sample images served under /samples/"))
        func histogram(_ stage: String, _ help: String) -> DurationHistogram {
            registry.makeDurationHistogram(
                descriptor: Self.name("thumbnail_\(stage)_seconds", help), buckets: Self.buckets)
        }
        originSeconds = histogram("origin", "Time to fetch a source from its origin")
        decodeSeconds = histogram("decode", "Time to decode a source (at the thumbnail's size)")
        resizeSeconds = histogram("resize", "Time to crop and scale to the output size")
        encodeSeconds = histogram("encode", "Time to encode a thumbnail")
        storeSeconds = histogram("store", "Time to store a result in the caches")
        queueDepth = registry.makeGauge(descriptor: Self.name("thumbnail_queue_depth", "Work waiting for a worker"))
        inFlight = registry.makeGauge(descriptor: Self.name("thumbnail_in_flight", "Work holding a worker"))
        httpInFlight = registry.makeGauge(descriptor: Self.name("thumbnail_http_in_flight", "Requests being answered"))
        residentMemory = registry.makeGauge(descriptor: Self.name("process_resident_memory_bytes", "Resident set size"))
    }

    /// A full metric name with its help text (the descriptor's unit is part of the name here).
    static func name(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// The SDK's metrics factory for this registry (loaders, disk caches, Redis).
    public var factory: PrometheusMetricsFactory { PrometheusMetricsFactory(registry: registry) }

    func request(status: Int, format: String) {
        registry.makeCounter(
            descriptor: Self.name("thumbnail_requests_total", "Answered thumbnail requests"),
            labels: [("status", String(status)), ("format", format)]
        ).increment()
    }

    func cacheHit(kind: CacheKind, level: CacheLevel) {
        registry.makeCounter(
            descriptor: Self.name("thumbnail_cache_hits_total", "Cache lookups answered, by kind and level"),
            labels: [("kind", kind.rawValue), ("level", level.rawValue)]
        ).increment()
    }

    func cacheMiss(kind: CacheKind) {
        registry.makeCounter(
            descriptor: Self.name("thumbnail_cache_misses_total", "Cache lookups that missed every level"),
            labels: [("kind", kind.rawValue)]
        ).increment()
    }

    func coalesced(kind: CacheKind) {
        registry.makeCounter(
            descriptor: Self.name("thumbnail_coalesced_total", "Requests that joined running work"),
            labels: [("kind", kind.rawValue)]
        ).increment()
    }

    func rejected(_ reason: String) {
        registry.makeCounter(
            descriptor: Self.name("thumbnail_rejected_total", "Requests refused for load"), labels: [("reason", reason)]
        ).increment()
    }

    /// The exposition text (RSS refreshed first).
    public func render() -> String {
        if let rss = ProcessMemory.residentBytes() { residentMemory.set(Double(rss)) }
        return registry.emitToString()
    }

    /// The value of the sample `name{labels}` in the exposition text, or nil. For tests and tools.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        Self.value(name, labels, in: render())
    }

    /// The value of the sample `name{labels}` in exposition `text`: the one whose label set is exactly `labels`
    /// (in any order), or nil.
    public static func value(_ name: String, _ labels: [String: String] = [:], in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let series = line[..<space]
            let sampleName = series.prefix { $0 != "{" }
            guard sampleName == name else { continue }
            var found: [String: String] = [:]
            if let open = series.firstIndex(of: "{"), series.hasSuffix("}") {
                let body = series[series.index(after: open)..<series.index(before: series.endIndex)]
                for pair in body.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { continue }
                    found[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
            }
            if found == labels { return Double(line[line.index(after: space)...]) }
        }
        return nil
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

/// The process's resident memory, from `/proc/self/statm`.
enum ProcessMemory {
    /// Resident bytes, or nil where `/proc` is not there.
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
