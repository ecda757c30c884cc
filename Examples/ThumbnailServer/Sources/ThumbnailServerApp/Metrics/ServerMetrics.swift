import Foundation
import Prometheus
import Synchronization

/// The server's Prometheus registry: the ImageService's metrics (named `thumbnail_…`, through swift-metrics and
/// this registry's factory), the SDK's loader, disk and Redis metrics, and the server's own: the gallery's samples
/// served, the open connections and `process_resident_memory_bytes`. A registry of its own, so several servers in
/// one process (as in the tests) never share counts.
///
/// The service's names: `thumbnail_requests_total{status, format}`, `thumbnail_cache_hits_total{kind, level}`,
/// `thumbnail_cache_misses_total{kind}`, `thumbnail_coalesced_total{kind}`, `thumbnail_origin_requests_total`,
/// `thumbnail_revalidations_total{outcome}`, `thumbnail_policy_refusals_total{where}`,
/// `thumbnail_incomplete_sources_total`, the histograms
/// `thumbnail_origin_seconds`, `thumbnail_decode_seconds`, `thumbnail_resize_seconds`, `thumbnail_encode_seconds`,
/// `thumbnail_store_seconds`, `thumbnail_not_modified_total`, `thumbnail_rejected_total{reason}`, and the gauges
/// `thumbnail_queue_depth`, `thumbnail_in_flight`, `thumbnail_origin_in_flight`, `thumbnail_http_in_flight`.
///
/// Thread-safe (the registry locks).
public final class ServerMetrics: Sendable {
    /// The registry everything is in; `/metrics` on the metrics port renders it.
    public let registry: PrometheusCollectorRegistry

    let samplesServed: Counter
    let connections: Gauge
    let residentMemory: Gauge
    /// Read at each scrape (the open connections).
    let connectionCount: Mutex<(@Sendable () -> Int)?> = Mutex(nil)

    static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
        .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(500), .seconds(1), .seconds(2),
        .seconds(5), .seconds(10),
    ]

    /// Creates the metrics in a new registry.
    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        samplesServed = registry.makeCounter(
            descriptor: Self.name("thumbnail_samples_served_total", "Sample images served under /samples/"))
        connections = registry.makeGauge(descriptor: Self.name("thumbnail_connections", "Open client connections"))
        residentMemory = registry.makeGauge(descriptor: Self.name("process_resident_memory_bytes", "Resident set size"))
    }

    /// A full metric name with its help text (the descriptor's unit is part of the name here).
    static func name(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// The metrics factory for this registry (the service, the SDK's loaders, disk caches, Redis); durations are
    /// histograms with ``buckets``.
    public var factory: PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.buckets
        return factory
    }

    /// The exposition text (RSS refreshed first).
    public func render() -> String {
        if let rss = ProcessMemory.residentBytes() { residentMemory.set(Double(rss)) }
        if let count = connectionCount.withLock({ $0 }) { connections.set(Double(count())) }
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
