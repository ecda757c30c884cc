import Foundation
import ImageCore
import Metrics
import Synchronization

/// The loader's swift-metrics instruments, created once per loader with the configured factory.
///
/// Labels (with the default prefix): `webimage_http_requests_total` (transfers sent, retries included),
/// `webimage_http_bytes_total` (bytes received, redirect bodies included, added when a transfer ends),
/// `webimage_http_duration` (timer, per finished or failed transfer), `webimage_http_coalesced_total` (callers
/// that joined an existing transfer), `webimage_http_failures_total` with dimension `kind` = the
/// ``ImageError/Code`` name, and `webimage_http_cancelled_total`.
final class HTTPLoaderMetrics: Sendable {
    let requests: Counter
    let bytes: Counter
    let duration: CoreMetrics.Timer
    let coalescedJoins: Counter
    let cancelled: Counter
    private let factory: any MetricsFactory
    private let prefix: String
    // Failure counters by kind, created on first use (the set of codes is open).
    private let failures = Mutex<[String: Counter]>([:])

    init(prefix: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        self.prefix = prefix
        requests = Counter(label: "\(prefix)_requests_total", factory: factory)
        bytes = Counter(label: "\(prefix)_bytes_total", factory: factory)
        duration = CoreMetrics.Timer(label: "\(prefix)_duration", factory: factory)
        coalescedJoins = Counter(label: "\(prefix)_coalesced_total", factory: factory)
        cancelled = Counter(label: "\(prefix)_cancelled_total", factory: factory)
    }

    func recordFailure(_ error: ImageError) {
        let kind = error.code.name
        let counter = failures.withLock { counters -> Counter in
            if let counter = counters[kind] { return counter }
            let counter = Counter(
                label: "\(prefix)_failures_total", dimensions: [("kind", kind)], factory: factory)
            counters[kind] = counter
            return counter
        }
        counter.increment()
    }
}
