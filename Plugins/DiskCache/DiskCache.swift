import Dispatch
import Foundation
import ImageCore
import Synchronization

/// A file-system cache of image bytes with per-entry metadata; the disk level of SDWebImage's `SDImageCache`,
/// hardened for servers.
///
/// - One file per entry in a namespace directory (``DiskCacheConfiguration/directory``), named `v2-`, the BLAKE3
///   of the whole key and a short extension (naming and format version 2: entries of version 1 are clean misses
///   and sweeps remove them); the file holds a small header with the ``/ImageCore/CacheEntryMetadata`` and then
///   the bytes as given. Entries are published by writing a temporary file in the same directory and renaming
///   it, so readers — in this process or another — never see a torn entry. A caller's extended data
///   (``/ImageCore/CacheEntryMetadata/extendedData``, at most ``maxExtendedDataSize`` bytes) is kept in an
///   extended attribute of the entry's file: it is replaced with the entry and can be changed alone
///   (``setExtendedData(_:forKey:)``).
/// - The access time used for expiry and LRU trimming is the file's modification time, which the cache sets
///   itself on a hit (at most once per ``DiskCacheConfiguration/accessTimeGranularity``); Linux atime is not
///   trusted.
/// - The size limit is enforced while the process runs: after a write that takes the known total over
///   ``maxDiskSize`` (before that store completes), after
///   ``DiskCacheConfiguration/sweepAfterBytesWritten`` bytes, on a timer, and once at start. A sweep trims to
///   the low-water mark; with several writers at once, each store still returns only after a sweep that saw
///   it. Several processes may share a directory; each sweep re-reads it, so the limit holds
///   eventually for all of them. ``maxDiskSize`` and ``maxDiskAge`` can be changed while the cache runs; the next
///   store or sweep honours them.
/// - Garbage, truncated, hostile and wrong-key entry files are misses and are removed (the header decoder
///   throws a typed `DiskEntryCodecError`, never traps). A file larger than
///   ``DiskCacheConfiguration/maxEntrySize`` (plus its header) is never read into memory: a miss, removed. A
///   file truncated, rewritten with truncation or extended by someone else while it is read is a miss, never
///   wrong bytes (the cache's own writers never change a published file); a same-size overwrite in place by
///   another program is caught by ``DiskCacheConfiguration/verifiesChecksums``, which checks every body against
///   its checksum.
/// - The cache deletes only what it can prove it wrote: files are deleted only in a directory that carries its
///   marker (`.webimage-cache`, made when the cache creates the directory or finds it empty), and there only
///   under the names the cache writes (its entry files, of this and the previous version, and its temporary
///   files); any other file and any subdirectory stay. A directory that is not empty and has no marker is not
///   the cache's: the cache keeps nothing there — queries miss, stores fail with `cacheFailure` caused by
///   ``DiskCacheDirectoryNotOwned``, removals and sweeps delete nothing — and says so in a warning
///   (``ownsDirectory``). Give each cache a new or empty directory.
/// - Metrics (swift-metrics) and logs (swift-log) report dropped stores and bad entry files; see
///   ``DiskCacheConfiguration/metricsPrefix``.
///
/// Threading: thread-safe. Asynchronous stores and removals run on the cache's write pool (dedicated threads,
/// ``DiskCacheConfiguration/writeConcurrency``, never the Swift cooperative pool): work on different entries
/// runs in parallel, work on one entry one at a time in call order, so two stores of one key land in call
/// order. A clear, a migration and the blocking sweeps run alone, after everything submitted before them. The
/// asynchronous write backlog is bounded (``DiskCacheConfiguration/maxWriteBacklog``,
/// ``DiskCacheConfiguration/maxWriteBacklogBytes``): a store beyond it is dropped with `cacheFailure` and counted.
/// Asynchronous reads run on a bounded read pool. The blocking methods (``entry(forKey:)``,
/// ``storeData(_:metadata:forKey:)``, …) do their file work on the caller's thread (after any queued work on the
/// same entry): do not call them from async code without hopping to a thread you may block, nor from a
/// completion of this cache. A store that is queued but not yet written is already visible to queries.
/// Completions run on the cache's threads, never under its lock.
///
/// The fast entry points (for benchmarks) are ``entry(forKey:)`` for a hit and
/// ``storeData(_:metadata:forKey:)`` for a store; ``sweep()`` for a sweep.
public final class DiskCache: ImageCacheProtocol, Sendable {
    /// A process-wide cache with the default configuration (`~/.cache/webimage`).
    public static let shared = DiskCache()

    /// The directory and limits of this cache: the configuration it was created with, with the size and age
    /// limits in force now.
    public var configuration: DiskCacheConfiguration {
        var current = initialConfiguration
        current.maxDiskSize = limits.maxDiskSize
        current.maxDiskAge = limits.maxDiskAge
        return current
    }

    /// The most bytes of extended data (``/ImageCore/CacheEntryMetadata/extendedData``) one entry may have: 2 KiB.
    /// More fails with `cacheFailure` caused by ``DiskCacheExtendedDataTooLarge``.
    public static let maxExtendedDataSize = DiskExtendedData.maxSize

    /// The configuration given to ``init(configuration:)``.
    let initialConfiguration: DiskCacheConfiguration
    let limits: DiskCacheLimits
    let store: DiskEntryStore
    let writePool: DiskWritePool
    let readPool: WorkPool
    let state: Mutex<DiskCacheState>
    /// Held while a sweep walks the directory: one sweep at a time.
    let sweepLock = Mutex(SweepRecord())
    let metrics: DiskCacheMetrics
    /// Entry files found truncated, garbage or foreign by reads of this instance (tests: a torn write shows here).
    let corruptReads = Atomic<Int>(0)
    /// Queued stores and removals plus clears in flight (`state.pending.count + state.clearsInFlight`), published
    /// under the state lock: a query skips the lock while it is 0.
    let pendingActivity = Atomic<Int>(0)
    private let ticker: (any SweepTicking)?

    /// Creates a cache over `configuration.directory`, creating the directory on demand.
    ///
    /// Schedules a first sweep (which measures the directory and decides whether the cache owns it, see
    /// ``ownsDirectory``; work submitted meanwhile waits for it) and, when configured, the periodic sweep.
    public init(configuration: DiskCacheConfiguration = .default) {
        initialConfiguration = configuration
        let limits = DiskCacheLimits(configuration: configuration)
        self.limits = limits
        let directory = configuration.directory.standardizedFileURL.path
        store = DiskEntryStore(
            directory: directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory,
            fs: DiskFileSystem(faults: configuration.faults), limits: limits,
            accessTimeGranularity: configuration.accessTimeGranularity, fsyncOnWrite: configuration.fsyncOnWrite,
            stampsWrites: configuration.clock != nil, verifiesChecksums: configuration.verifiesChecksums)
        state = Mutex(DiskCacheState(configuration: configuration))
        writePool = DiskWritePool(label: "webimage.diskcache.write", maxThreads: configuration.writeConcurrency)
        readPool = WorkPool(
            label: "webimage.diskcache.read", maxConcurrent: configuration.readConcurrency, qos: .utility)
        metrics = DiskCacheMetrics(prefix: configuration.metricsPrefix, factory: configuration.metricsFactory)
        ticker = configuration.sweepTicker ?? configuration.sweepInterval.map { SweepTimer(interval: $0) }
        submitBarrier { [weak self] in self?.runSweep(trigger: .startup) }
        ticker?.start { [weak self] in
            guard let self else { return }
            // Beside the writes, not a barrier: a periodic sweep never holds up stores.
            self.writePool.submit { [weak self] in self?.runSweep(trigger: .timer) }
        }
    }

    deinit { ticker?.stop() }

    /// The namespace directory.
    public var directory: URL { initialConfiguration.directory }

    /// Whether the cache owns its directory: the directory carries the cache's marker (`.webimage-cache`), which
    /// the cache creates when it makes the directory or finds it empty.
    ///
    /// Only in a directory it owns does the cache store, serve and delete; in one that is not empty and has no
    /// marker it keeps nothing (stores fail with `cacheFailure` caused by ``DiskCacheDirectoryNotOwned``) and
    /// deletes nothing. Every sweep looks again: a directory emptied, or given the marker by hand, becomes the
    /// cache's; one whose marker was deleted stops being it. Blocking: waits for the start-up sweep, which
    /// decides it first. A directory that does not exist yet counts as owned (the first store creates and marks
    /// it).
    public var ownsDirectory: Bool {
        runInline(lane: nil) { store.ownership.value != .foreign }
    }

    /// Bytes the entry files may occupy; 0 means no size limit (SDWebImage's `SDImageCacheConfig.maxDiskSize`).
    ///
    /// Starts as ``DiskCacheConfiguration/maxDiskSize``. Set it while the cache runs, e.g. when the disk quota of
    /// the service changes: the next store that takes the total over it, or the next sweep, trims down to the
    /// low-water mark of the new limit (call ``sweep()`` to trim at once). The entry size limit and, unless it was
    /// configured, the write-driven sweep interval follow it. Thread-safe; a store already running finishes under
    /// the limit it read. Negative values mean 0.
    public var maxDiskSize: Int {
        get { limits.maxDiskSize }
        set { limits.maxDiskSize = newValue }
    }

    /// Entries not accessed for this long are expired; nil keeps them forever (SDWebImage's
    /// `SDImageCacheConfig.maxDiskAge`).
    ///
    /// Starts as ``DiskCacheConfiguration/maxDiskAge``. Set it while the cache runs: the next read of an entry
    /// older than the new age is a miss, and the next sweep removes every such entry. Thread-safe. Negative values
    /// mean 0; NaN means nil.
    public var maxDiskAge: TimeInterval? {
        get { limits.maxDiskAge }
        set { limits.maxDiskAge = newValue }
    }

    /// The file that holds (or would hold) the entry for `key`.
    public func fileURL(forKey key: String) -> URL {
        URL(fileURLWithPath: store.path(DiskFileNaming.entryName(forKey: key)))
    }

    /// Seconds since 1970: the test clock's, else the system's (read directly: a hit asks for it every time).
    func now() -> Double {
        if let clock = initialConfiguration.clock { return clock().timeIntervalSince1970 }
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Queues `body` as a barrier: it runs alone, after everything submitted before it.
    func submitBarrier(_ body: @escaping @Sendable () -> Void, then: (@Sendable () -> Void)? = nil) {
        let work = DiskJobWork {
            body()
            return then
        }
        switch state.withLock({ $0.scheduler.submit(lane: nil, inline: false, work: work) }) {
        case .start(let job): launch([job])
        case .queued, .rejected: break
        }
    }

    // MARK: Blocking API

    /// Reads the entry for `key` on the caller's thread; nil on a miss (absent, expired, corrupt).
    ///
    /// A hit refreshes the entry's access time when it is older than the granularity.
    /// - Throws: ``/ImageCore/ImageError`` `cacheFailure` (stage `cacheQuery`) when the file exists but cannot
    ///   be read (permissions, I/O error); the cause is a ``DiskCacheIOError``.
    public func entry(forKey key: String) throws(ImageError) -> DiskCacheEntry? {
        let name = DiskFileNaming.entryName(forKey: key)
        if pendingActivity.load(ordering: .acquiring) != 0, let pending = pendingValue(name) { return pending.entry }
        var entry = DiskCacheEntry.empty
        let result: DiskEntryStore.ReadResult
        do {
            result = try store.read(
                name: name, key: key, now: now(), maxBodySize: limits.effectiveMaxEntrySize, into: &entry)
        } catch {
            throw Self.failure(error, stage: .cacheQuery)
        }
        switch result {
        case .hit:
            return entry
        case .miss:
            return nil
        case .bad(let problem, let detail):
            if problem == .corrupt { corruptReads.add(1, ordering: .relaxed) }
            metrics.record(problem)
            initialConfiguration.logger.debug(
                "disk cache entry is a miss: \(problem)", metadata: ["key": "\(key)", "detail": "\(detail)"])
            return nil
        }
    }

    /// The bytes stored for `key`, or nil on a miss or a read failure.
    public func data(forKey key: String) -> Data? { (try? entry(forKey: key))?.data }

    /// Writes `data` with `metadata` under `key` and waits until it is on disk (and the size limit is enforced).
    ///
    /// `originalKey` and, when absent, `storedAt` of the metadata are filled in; its `extendedData` is stored with
    /// the entry (see ``setExtendedData(_:forKey:)``).
    /// - Throws: ``/ImageCore/ImageError`` `cacheFailure` (stage `cacheStore`) when the file cannot be written
    ///   (disk full, read-only, a file system without extended attributes for extended data, …), the entry alone
    ///   exceeds the entry size limit, or the extended data exceeds ``maxExtendedDataSize`` (caused by
    ///   ``DiskCacheExtendedDataTooLarge``); the previous entry for `key` is then intact.
    public func storeData(_ data: Data, metadata: CacheEntryMetadata? = nil, forKey key: String) throws(ImageError) {
        try DiskExtendedData.check(metadata?.extendedData, stage: .cacheStore)
        let name = DiskFileNaming.entryName(forKey: key)
        try runInline(lane: name) { performStore(name: name, key: key, data: data, metadata: metadata) }.get()
    }

    /// The extended data stored with `key`'s entry (SDWebImage's `SDImageCache.extendedData(forKey:)`), or nil
    /// when the entry has none or there is no entry.
    ///
    /// Blocking, like ``entry(forKey:)`` (it reads the entry).
    /// - Throws: ``/ImageCore/ImageError`` `cacheFailure` when the file exists but cannot be read.
    public func extendedData(forKey key: String) throws(ImageError) -> Data? {
        try entry(forKey: key)?.metadata.extendedData
    }

    /// Sets, or with nil removes, the extended data of `key`'s entry without rewriting its bytes (SDWebImage's
    /// `SDDiskCache.setExtendedData(_:forKey:)`); waits until it is on disk.
    ///
    /// Runs after the work already queued for `key` (a queued store lands first, then this changes it). The data
    /// lives in an extended attribute of the entry's file, so it survives restarts, is seen by every process
    /// sharing the directory, and goes away with the entry: a later store replaces it with that store's
    /// `metadata.extendedData`. Another process replacing the entry at the same moment wins or loses as a whole;
    /// the data never lands on another key's entry.
    /// - Returns: false when there is no entry for `key` (nothing is stored).
    /// - Throws: ``/ImageCore/ImageError`` `cacheFailure` (stage `cacheStore`) when `data` is larger than
    ///   ``maxExtendedDataSize`` (caused by ``DiskCacheExtendedDataTooLarge``; nothing changes), or the file
    ///   system refuses (no extended attributes: `EOPNOTSUPP` in a ``DiskCacheIOError``).
    @discardableResult
    public func setExtendedData(_ data: Data?, forKey key: String) throws(ImageError) -> Bool {
        try DiskExtendedData.check(data, stage: .cacheStore)
        let name = DiskFileNaming.entryName(forKey: key)
        return try runInline(lane: name) { () -> Result<Bool, ImageError> in
            do {
                return .success(try store.setExtendedData(name: name, key: key, data: data, now: now()))
            } catch {
                return .failure(Self.failure(error, stage: .cacheStore))
            }
        }.get()
    }

    /// True when an unexpired entry for `key` exists (its contents are not checked).
    public func containsData(forKey key: String) -> Bool {
        let name = DiskFileNaming.entryName(forKey: key)
        if pendingActivity.load(ordering: .acquiring) != 0, let pending = pendingValue(name) {
            return pending.entry != nil
        }
        return store.contains(name: name, now: now())
    }

    /// Removes the entry for `key` and waits.
    public func removeData(forKey key: String) {
        let name = DiskFileNaming.entryName(forKey: key)
        runInline(lane: name) { performRemove(name: name) }
    }

    /// Removes every entry and waits; the directory, its marker and any file that is not the cache's stay.
    public func removeAll() {
        runInline(lane: nil) { performRemoveAll() }
    }

    /// Removes entries not accessed within ``maxDiskAge`` and waits.
    public func removeExpired() {
        runInline(lane: nil) { runSweep(trigger: .explicit, trim: false) }
    }

    /// Runs a full sweep now (expiry, stale files, size limit down to the low-water mark) and waits.
    public func sweep() {
        runInline(lane: nil) { runSweep(trigger: .explicit) }
    }

    /// Bytes of the entry files now in the directory (all processes' entries); walks the directory, blocking.
    public func totalSize() -> Int { (try? store.measure().size) ?? 0 }

    /// Number of entry files now in the directory; walks the directory, blocking.
    public func totalCount() -> Int { (try? store.measure().count) ?? 0 }

    /// Moves the entries of an older cache directory (same file format) into this one and waits.
    ///
    /// Entries whose key this cache already holds are dropped; unreadable and foreign files are left in place.
    /// The old directory is removed when it ends up empty.
    /// - Returns: the number of entries moved.
    /// - Throws: ``/ImageCore/ImageError`` `cacheFailure` when the old directory cannot be read.
    @discardableResult
    public func migrate(from oldDirectory: URL) throws(ImageError) -> Int {
        try runInline(lane: nil) { performMigration(from: oldDirectory.standardizedFileURL.path) }.get()
    }

    static func failure(_ error: any Error, stage: ImageError.Stage) -> ImageError {
        if let error = error as? ImageError { return error }
        if let io = error as? DiskCacheIOError { return .cacheFailure(io, stage: stage) }
        if let notOwned = error as? DiskCacheDirectoryNotOwned {
            return ImageError(.cacheFailure, stage: stage, message: notOwned.description, underlying: notOwned)
        }
        if let codec = error as? DiskEntryCodecError {
            return ImageError(.cacheFailure, stage: stage, message: "entry header: \(codec)", underlying: codec)
        }
        return .cacheFailure(SendableErrorBox(error), stage: stage)
    }
}
