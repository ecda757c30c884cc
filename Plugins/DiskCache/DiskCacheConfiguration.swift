import Foundation

/// Where a ``DiskCache`` keeps its files and how it bounds them.
public struct DiskCacheConfiguration: Sendable {
    /// The namespace directory, dedicated to the cache. When the cache created it (or found it empty) it marks
    /// it with a `.webimage-cache` file and its sweeps then also remove files that are not cache entries; in an
    /// unmarked directory they only manage entry files.
    public var directory: URL
    /// Entries not accessed for this long are removed; nil keeps them forever. Default 7 days.
    public var maxDiskAge: TimeInterval?
    /// Bytes the entry files (header plus body) may occupy; 0 means no size limit. Default 1 GiB.
    public var maxDiskSize: Int
    /// A sweep over the size limit trims down to `maxDiskSize * lowWaterFraction` (default 0.8), so the next
    /// sweep is not needed for the next write.
    public var lowWaterFraction: Double
    /// How often a sweep runs while the cache exists; nil turns the timer off. Default 60 s.
    public var sweepInterval: TimeInterval?
    /// A sweep also runs after this many bytes were written since the last one (it re-reads the directory, so
    /// writes of other processes are counted). Default a tenth of `maxDiskSize` (64 MiB with no size limit).
    public var sweepAfterBytesWritten: Int
    /// A hit refreshes the entry's access time only when it is older than this, so hot entries cost no write.
    /// Default 60 s.
    public var accessTimeGranularity: TimeInterval
    /// `fsync` each entry before the rename and the directory after it (durable across power loss, slower).
    /// Default off: a crash may lose recent entries but never leaves a torn one.
    public var fsyncOnWrite: Bool
    /// Reads that run at once on the cache's read pool. Default 4.
    public var readConcurrency: Int

    /// Test seam: makes chosen file operations fail.
    var faults: DiskFaultInjector?
    /// Test seam: the wall clock used for access times and expiry (nil: the system clock).
    var clock: (@Sendable () -> Date)?

    /// Creates a configuration for `namespace` under ``defaultDirectory(namespace:)``, or in `directory`.
    public init(
        namespace: String = "webimage", directory: URL? = nil, maxDiskAge: TimeInterval? = 7 * 24 * 3600,
        maxDiskSize: Int = 1 << 30, lowWaterFraction: Double = 0.8, sweepInterval: TimeInterval? = 60,
        sweepAfterBytesWritten: Int? = nil, accessTimeGranularity: TimeInterval = 60, fsyncOnWrite: Bool = false,
        readConcurrency: Int = 4
    ) {
        self.directory = directory ?? Self.defaultDirectory(namespace: namespace)
        self.maxDiskAge = maxDiskAge
        self.maxDiskSize = max(0, maxDiskSize)
        self.lowWaterFraction = min(1, max(0, lowWaterFraction))
        self.sweepInterval = sweepInterval
        self.sweepAfterBytesWritten = max(1, sweepAfterBytesWritten ?? (maxDiskSize > 0 ? maxDiskSize / 10 : 64 << 20))
        self.accessTimeGranularity = max(0, accessTimeGranularity)
        self.fsyncOnWrite = fsyncOnWrite
        self.readConcurrency = max(1, readConcurrency)
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

    /// The size a sweep over the limit trims down to.
    var lowWaterMark: Int { Int(Double(maxDiskSize) * lowWaterFraction) }
}
