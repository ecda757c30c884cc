import Foundation
import Logging
import Metrics

/// Where a ``DiskCache`` keeps its files and how it bounds them.
public struct DiskCacheConfiguration: Sendable {
    /// The namespace directory, dedicated to the cache: one that does not exist yet, or is empty. The cache marks
    /// it with a `.webimage-cache` file and deletes only there, only the names it writes (other files stay). A
    /// directory that is not empty and has no marker is not the cache's: the cache keeps nothing there and deletes
    /// nothing (stores fail with `cacheFailure` caused by ``DiskCacheDirectoryNotOwned``; see
    /// ``DiskCache/ownsDirectory``).
    public var directory: URL
    /// Entries not accessed for this long are removed; nil keeps them forever. Default 7 days. Change it while the
    /// cache runs with ``DiskCache/maxDiskAge``.
    public var maxDiskAge: TimeInterval?
    /// Bytes the entry files (header plus body) may occupy; 0 means no size limit. Default 1 GiB. Change it while
    /// the cache runs with ``DiskCache/maxDiskSize``.
    public var maxDiskSize: Int
    /// A sweep over the size limit trims down to `maxDiskSize * lowWaterFraction` (default 0.8), so the next
    /// sweep is not needed for the next write.
    public var lowWaterFraction: Double
    /// How often a sweep runs while the cache exists; nil turns the timer off. Default 60 s.
    public var sweepInterval: TimeInterval?
    /// A sweep also runs after this many bytes were written since the last one (it re-reads the directory, so
    /// writes of other processes are counted). Default a tenth of `maxDiskSize` (64 MiB with no size limit), which
    /// follows ``DiskCache/maxDiskSize`` when that changes at run time.
    public var sweepAfterBytesWritten: Int {
        didSet { sweepAfterBytesWrittenIsDerived = false }
    }
    /// True while ``sweepAfterBytesWritten`` is the default derived from the size limit.
    var sweepAfterBytesWrittenIsDerived = false
    /// A hit refreshes the entry's access time only when it is older than this, so hot entries cost no write.
    /// Default 60 s.
    public var accessTimeGranularity: TimeInterval
    /// `fsync` each entry before the rename and the directory after it (durable across power loss, slower).
    /// Default off: a crash may lose recent entries but never leaves a torn one.
    public var fsyncOnWrite: Bool
    /// Reads that run at once on the cache's read pool. Default 4.
    public var readConcurrency: Int
    /// Stores and removals of different entries that run at once on the cache's write pool. Default: the number
    /// of active cores. Work on one entry always runs one at a time, in call order.
    public var writeConcurrency: Int
    /// The largest body one entry may have. A larger store fails with `cacheFailure`; an entry file on disk
    /// larger than this (grown or replaced by someone else) is never read into memory: it is a miss and is
    /// removed. Default 64 MiB (HTTPLoader's default maximum response size); never more than `maxDiskSize` when
    /// that is set.
    public var maxEntrySize: Int
    /// Asynchronous stores (``DiskCache/store(_:data:metadata:forKey:cacheType:completion:)``) queued or being
    /// written at most. A store beyond this, or beyond ``maxWriteBacklogBytes``, is dropped: its completion gets
    /// `cacheFailure` caused by ``DiskCacheWriteBacklogFull``, the `…_dropped_stores_total` counter goes up and
    /// a warning is logged (once per overflow). The previous entry of that key stays. Default 1,024.
    public var maxWriteBacklog: Int
    /// Bytes of asynchronous stores queued or being written at most (see ``maxWriteBacklog``). Default 64 MiB.
    /// A single store larger than this is still taken when nothing else is queued.
    public var maxWriteBacklogBytes: Int
    /// Check every hit's body against the checksum (XXH64) written in its header. Off by default: it costs
    /// about a third of a raw read of the file. The cache's own writers (in any process) publish whole files
    /// by rename and never change a published file, and a file that shrinks or grows during a read is detected
    /// without it (a miss, never wrong bytes); what only the checksum catches is a body damaged at rest or
    /// overwritten in place, without truncation, by another program while it is read — turn it on when
    /// something else writes the directory.
    /// A mismatch is a miss and the file is removed.
    public var verifiesChecksums = false
    /// Where the cache logs: a warning when stores are dropped, debug for entries found corrupt, too large or
    /// changed while being read.
    public var logger = Logger(label: "webimage.diskcache")
    /// The metrics backend; nil uses the process-wide `MetricsSystem` factory.
    public var metricsFactory: (any MetricsFactory)?
    /// Prefix of every metric label (default `webimage_disk`).
    public var metricsPrefix = "webimage_disk"

    /// Test seam: makes chosen file operations fail.
    var faults: DiskFaultInjector?
    /// Test seam: the wall clock used for access times and expiry (nil: the system clock).
    var clock: (@Sendable () -> Date)?
    /// Test seam: drives the periodic sweep instead of a Dispatch timer (used even when `sweepInterval` is nil).
    var sweepTicker: (any SweepTicking)?
    /// Test seam: told after every sweep, with what started it.
    var onSweep: (@Sendable (SweepTrigger, SweepReport) -> Void)?

    /// Creates a configuration for `namespace` under ``defaultDirectory(namespace:)``, or in `directory`.
    public init(
        namespace: String = "webimage", directory: URL? = nil, maxDiskAge: TimeInterval? = 7 * 24 * 3600,
        maxDiskSize: Int = 1 << 30, lowWaterFraction: Double = 0.8, sweepInterval: TimeInterval? = 60,
        sweepAfterBytesWritten: Int? = nil, accessTimeGranularity: TimeInterval = 60, fsyncOnWrite: Bool = false,
        readConcurrency: Int = 4, writeConcurrency: Int? = nil, maxEntrySize: Int = 64 << 20,
        maxWriteBacklog: Int = 1024, maxWriteBacklogBytes: Int = 64 << 20
    ) {
        self.directory = directory ?? Self.defaultDirectory(namespace: namespace)
        self.maxDiskAge = maxDiskAge
        self.maxDiskSize = max(0, maxDiskSize)
        self.lowWaterFraction = min(1, max(0, lowWaterFraction))
        self.sweepInterval = sweepInterval
        self.sweepAfterBytesWritten = max(1, sweepAfterBytesWritten ?? (maxDiskSize > 0 ? maxDiskSize / 10 : 64 << 20))
        sweepAfterBytesWrittenIsDerived = sweepAfterBytesWritten == nil
        self.accessTimeGranularity = max(0, accessTimeGranularity)
        self.fsyncOnWrite = fsyncOnWrite
        self.readConcurrency = max(1, readConcurrency)
        self.writeConcurrency = max(1, writeConcurrency ?? ProcessInfo.processInfo.activeProcessorCount)
        self.maxEntrySize = max(0, maxEntrySize)
        self.maxWriteBacklog = max(1, maxWriteBacklog)
        self.maxWriteBacklogBytes = max(0, maxWriteBacklogBytes)
    }

    /// The default configuration (namespace `webimage`).
    public static var `default`: DiskCacheConfiguration { DiskCacheConfiguration() }

    /// `$XDG_CACHE_HOME/<namespace>` when that variable holds an absolute path, else `~/.cache/<namespace>`.
    public static func defaultDirectory(namespace: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        }
        return base.appendingPathComponent(namespace, isDirectory: true)
    }

}
