import Foundation
import Logging
import Metrics
import Synchronization

/// Why an asynchronous store was dropped: the write backlog was full.
///
/// The `underlying` error of the `cacheFailure` the store's completion gets. The previous entry of the key is
/// intact; the image itself was delivered (stores never fail a load).
public struct DiskCacheWriteBacklogFull: Error, Sendable, CustomStringConvertible, Hashable {
    /// Stores and removals queued or being written when this one arrived.
    public let queuedJobs: Int
    /// Bytes of the stores queued or being written.
    public let queuedBytes: Int
    /// Bytes of the dropped store.
    public let droppedBytes: Int

    /// Creates the error.
    public init(queuedJobs: Int, queuedBytes: Int, droppedBytes: Int) {
        self.queuedJobs = queuedJobs
        self.queuedBytes = queuedBytes
        self.droppedBytes = droppedBytes
    }

    /// "write backlog full: …".
    public var description: String {
        "write backlog full: \(queuedJobs) jobs and \(queuedBytes) bytes queued; a store of \(droppedBytes) bytes was dropped"
    }
}

/// What a read found wrong with an entry file (the debug log and the metrics say which).
enum DiskReadProblem: Sendable, Hashable {
    /// Not a valid entry file for the key (garbage, truncated, padded, hostile header, another key's entry).
    case corrupt
    /// Larger on disk than the entry size limit allows: not read.
    case oversize
    /// Changed by someone else while it was being read, twice in a row: not served.
    case changed
}

/// The cache's swift-metrics instruments and log throttle, created once per cache.
///
/// Labels (with the default prefix): `webimage_disk_dropped_stores_total` (asynchronous stores dropped because
/// the write backlog was full), `webimage_disk_bad_entries_total` with dimension `kind` = `corrupt`,
/// `oversize` or `changed` (entry files that were misses for that reason).
final class DiskCacheMetrics: Sendable {
    let droppedStores: Counter
    private let corrupt: Counter
    private let oversize: Counter
    private let changed: Counter
    /// True from a drop until a store is accepted again: one warning per overflow, not one per drop.
    private let overflowing = Atomic<Bool>(false)

    init(prefix: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        droppedStores = Counter(label: "\(prefix)_dropped_stores_total", factory: factory)
        let label = "\(prefix)_bad_entries_total"
        corrupt = Counter(label: label, dimensions: [("kind", "corrupt")], factory: factory)
        oversize = Counter(label: label, dimensions: [("kind", "oversize")], factory: factory)
        changed = Counter(label: label, dimensions: [("kind", "changed")], factory: factory)
    }

    func record(_ problem: DiskReadProblem) {
        switch problem {
        case .corrupt: corrupt.increment()
        case .oversize: oversize.increment()
        case .changed: changed.increment()
        }
    }

    /// Counts a dropped store; logs a warning for the first drop of an overflow.
    func recordDrop(_ error: DiskCacheWriteBacklogFull, logger: Logger) {
        droppedStores.increment()
        guard !overflowing.exchange(true, ordering: .relaxed) else { return }
        logger.warning(
            "disk cache dropping stores: \(error)",
            metadata: ["queuedJobs": "\(error.queuedJobs)", "queuedBytes": "\(error.queuedBytes)"])
    }

    /// Called when a store was accepted: ends an overflow, so the next drop warns again.
    func recordAccepted() {
        if overflowing.load(ordering: .relaxed) { overflowing.store(false, ordering: .relaxed) }
    }
}
