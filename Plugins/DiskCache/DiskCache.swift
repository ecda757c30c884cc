import Dispatch
import Foundation
import ImageCore
import Synchronization

/// A file-system cache of image bytes with per-entry metadata; the disk level of SDWebImage's `SDImageCache`,
/// hardened for servers.
///
/// - One file per entry in a namespace directory (``DiskCacheConfiguration/directory``), named by the SHA-256
///   of the key plus a short extension; the file holds a small header with the ``ImageCore/CacheEntryMetadata``
///   and then the bytes as given. Entries are published by writing a temporary file in the same directory and
///   renaming it, so readers — in this process or another — never see a torn entry.
/// - The access time used for expiry and LRU trimming is the file's modification time, which the cache sets
///   itself on a hit (at most once per ``DiskCacheConfiguration/accessTimeGranularity``); Linux atime is not
///   trusted.
/// - The size limit is enforced while the process runs: after a write that takes the known total over
///   ``DiskCacheConfiguration/maxDiskSize`` (before that store completes), after
///   ``DiskCacheConfiguration/sweepAfterBytesWritten`` bytes, on a timer, and once at start. A sweep trims to
///   the low-water mark. Several processes may share a directory; each sweep re-reads it, so the limit holds
///   eventually for all of them.
/// - Garbage, truncated and wrong-key entry files are misses and are removed. In a directory the cache owns (it
///   created it or found it empty, and marked it) sweeps also remove foreign files and stale temporaries.
///
/// Threading: thread-safe. Writes, removals and sweeps run on one serial queue; asynchronous reads on a bounded
/// read pool (never the Swift cooperative pool). The blocking methods (``entry(forKey:)``,
/// ``storeData(_:metadata:forKey:)``, …) block the caller: do not call them from async code without hopping to
/// a thread you may block. A store that is queued but not yet written is already visible to queries.
/// Completions run on the cache's queues, never under its lock.
///
/// The fast entry points (for benchmarks) are ``entry(forKey:)`` for a hit and
/// ``storeData(_:metadata:forKey:)`` for a store; ``sweep()`` for a sweep.
public final class DiskCache: ImageCacheProtocol, Sendable {
    /// A process-wide cache with the default configuration (`~/.cache/webimage`).
    public static let shared = DiskCache()

    /// The directory and limits of this cache.
    public let configuration: DiskCacheConfiguration

    let store: DiskEntryStore
    let writeQueue: DispatchQueue
    let readPool: WorkPool
    let state = Mutex(DiskCacheState())
    /// Entry files found truncated, garbage or foreign by reads of this instance (tests: a torn write shows here).
    let corruptReads = Atomic<Int>(0)
    private let onWriteQueue = DispatchSpecificKey<Bool>()
    private let timer: SweepTimer?

    /// Creates a cache over `configuration.directory`, creating the directory on demand.
    ///
    /// Schedules a first sweep (which measures the directory) and, when configured, the periodic sweep.
    public init(configuration: DiskCacheConfiguration = .default) {
        self.configuration = configuration
        let directory = configuration.directory.standardizedFileURL.path
        store = DiskEntryStore(
            directory: directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory,
            fs: DiskFileSystem(faults: configuration.faults), maxDiskAge: configuration.maxDiskAge,
            accessTimeGranularity: configuration.accessTimeGranularity, fsyncOnWrite: configuration.fsyncOnWrite,
            stampsWrites: configuration.clock != nil)
        let writeQueue = DispatchQueue(label: "webimage.diskcache.write", qos: .utility)
        self.writeQueue = writeQueue
        readPool = WorkPool(
            label: "webimage.diskcache.read", maxConcurrent: configuration.readConcurrency, qos: .utility)
        writeQueue.setSpecific(key: onWriteQueue, value: true)
        timer = configuration.sweepInterval.map { SweepTimer(queue: writeQueue, interval: $0) }
        timer?.start { [weak self] in self?.runSweep() }
        writeQueue.async { [weak self] in self?.runSweep() }
    }

    deinit { timer?.stop() }

    /// The namespace directory.
    public var directory: URL { configuration.directory }

    /// The file that holds (or would hold) the entry for `key`.
    public func fileURL(forKey key: String) -> URL {
        URL(fileURLWithPath: store.path(DiskFileNaming.fileName(forKey: key)))
    }

    func now() -> Double { (configuration.clock?() ?? Date()).timeIntervalSince1970 }

    /// Runs `body` on the write queue and waits (inline when already there).
    func onWriteQueueSync<T>(_ body: () throws -> T) rethrows -> T {
        if DispatchQueue.getSpecific(key: onWriteQueue) == true { return try body() }
        return try writeQueue.sync(execute: body)
    }

    // MARK: Blocking API

    /// Reads the entry for `key` on the caller's thread; nil on a miss (absent, expired, corrupt).
    ///
    /// A hit refreshes the entry's access time when it is older than the granularity.
    /// - Throws: ``ImageCore/ImageError`` `cacheFailure` (stage `cacheQuery`) when the file exists but cannot
    ///   be read (permissions, I/O error); the cause is a ``DiskCacheIOError``.
    public func entry(forKey key: String) throws(ImageError) -> DiskCacheEntry? {
        let name = DiskFileNaming.fileName(forKey: key)
        if let pending = pendingValue(name) { return pending.entry }
        do {
            return try store.read(name: name, key: key, now: now()) {
                corruptReads.add(1, ordering: .relaxed)
            }
        } catch {
            throw Self.failure(error, stage: .cacheQuery)
        }
    }

    /// The bytes stored for `key`, or nil on a miss or a read failure.
    public func data(forKey key: String) -> Data? { (try? entry(forKey: key))?.data }

    /// Writes `data` with `metadata` under `key` and waits until it is on disk (and the size limit is enforced).
    ///
    /// `originalKey` and, when absent, `storedAt` of the metadata are filled in.
    /// - Throws: ``ImageCore/ImageError`` `cacheFailure` (stage `cacheStore`) when the file cannot be written
    ///   (disk full, read-only, …) or the entry alone exceeds ``DiskCacheConfiguration/maxDiskSize``; the
    ///   previous entry for `key` is then intact.
    public func storeData(_ data: Data, metadata: CacheEntryMetadata? = nil, forKey key: String) throws(ImageError) {
        let name = DiskFileNaming.fileName(forKey: key)
        try onWriteQueueSync { performStore(name: name, key: key, data: data, metadata: metadata) }.get()
    }

    /// True when an unexpired entry for `key` exists (its contents are not checked).
    public func containsData(forKey key: String) -> Bool {
        let name = DiskFileNaming.fileName(forKey: key)
        if let pending = pendingValue(name) { return pending.entry != nil }
        return store.contains(name: name, now: now())
    }

    /// Removes the entry for `key` and waits.
    public func removeData(forKey key: String) {
        let name = DiskFileNaming.fileName(forKey: key)
        onWriteQueueSync { performRemove(name: name) }
    }

    /// Removes every entry (and any foreign file) and waits; the directory itself stays.
    public func removeAll() {
        onWriteQueueSync { performRemoveAll() }
    }

    /// Removes entries not accessed within ``DiskCacheConfiguration/maxDiskAge`` and waits.
    public func removeExpired() {
        onWriteQueueSync { runSweep(trim: false) }
    }

    /// Runs a full sweep now (expiry, stale files, size limit down to the low-water mark) and waits.
    public func sweep() {
        onWriteQueueSync { runSweep() }
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
    /// - Throws: ``ImageCore/ImageError`` `cacheFailure` when the old directory cannot be read.
    @discardableResult
    public func migrate(from oldDirectory: URL) throws(ImageError) -> Int {
        try onWriteQueueSync { performMigration(from: oldDirectory.standardizedFileURL.path) }.get()
    }

    static func failure(_ error: any Error, stage: ImageError.Stage) -> ImageError {
        if let error = error as? ImageError { return error }
        if let io = error as? DiskCacheIOError { return .cacheFailure(io, stage: stage) }
        return .cacheFailure(SendableErrorBox(error), stage: stage)
    }
}

/// The periodic sweep: a Dispatch timer on the write queue.
///
/// The source sits behind a `Mutex` (Dispatch sources are not `Sendable`); only `start` (from the owner's init)
/// and `stop` (from its deinit) touch it, and neither runs user code.
final class SweepTimer: Sendable {
    private let source: Mutex<any DispatchSourceTimer>

    init(queue: DispatchQueue, interval: TimeInterval) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = Int(max(0.01, interval) * 1e9)
        timer.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10))
        source = Mutex(timer)
    }

    func start(_ handler: @escaping @Sendable () -> Void) {
        source.withLock { timer in
            timer.setEventHandler(handler: handler)
            timer.resume()
        }
    }

    func stop() { source.withLock { $0.cancel() } }
}
