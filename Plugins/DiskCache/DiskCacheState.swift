import Foundation
import ImageCore

/// What the shell does for one scheduled job.
struct DiskJobWork: Sendable {
    /// Pool jobs: does the work and returns what to call once the job is recorded as finished (the caller's
    /// completion, so a completion may call the cache again without waiting on its own job). Inline jobs: wakes
    /// the blocked caller, returns nil.
    let perform: @Sendable () -> (@Sendable () -> Void)?
}

typealias DiskJob = DiskWriteScheduler<DiskEntryName, DiskJobWork>.Job

/// The in-memory bookkeeping of a ``DiskCache``, kept in its `Mutex`.
struct DiskCacheState {
    /// A write or removal queued but not yet done, so queries see it at once.
    struct Pending {
        let generation: UInt64
        /// The entry a queued store will write, or nil for a queued removal.
        let entry: DiskCacheEntry?
    }

    /// The order of the write work.
    var scheduler: DiskWriteScheduler<DiskEntryName, DiskJobWork>
    /// Entry bytes in the directory as of the last sweep, plus this process's writes since.
    var trackedSize = 0
    /// Bytes written since the last sweep.
    var bytesSinceSweep = 0
    /// Writes published so far (their sequence numbers); a sweep that started at `n` saw the first `n`.
    var writeSequence: UInt64 = 0
    /// A sweep is walking the directory; writes meanwhile are also counted in `writtenDuringSweep`.
    var sweeping = false
    var writtenDuringSweep = 0
    /// Queued stores and removals by file name.
    var pending: [DiskEntryName: Pending] = [:]
    /// Clears queued but not yet done: until then, keys without a pending store are misses.
    var clearsInFlight = 0
    var generation: UInt64 = 0

    init(configuration: DiskCacheConfiguration) {
        scheduler = DiskWriteScheduler(
            maxBacklogJobs: configuration.maxWriteBacklog, maxBacklogBytes: configuration.maxWriteBacklogBytes)
    }

    mutating func nextGeneration() -> UInt64 {
        generation &+= 1
        return generation
    }
}

/// The last trimming sweep, kept under the sweep lock.
struct SweepRecord {
    /// `writeSequence` when the last sweep that enforced the size limit started listing the directory.
    var lastTrimStart: UInt64 = 0
}

extension DiskCache {
    /// What a query should answer for `name` before touching the disk: `.some(entry or nil)` when a store,
    /// removal or clear is queued; nil to read the file.
    func pendingValue(_ name: DiskEntryName) -> DiskCacheState.Pending? {
        state.withLock { state in
            if let pending = state.pending[name] { return pending }
            return state.clearsInFlight > 0 ? DiskCacheState.Pending(generation: 0, entry: nil) : nil
        }
    }

    /// Forgets the pending record of `name` if no later operation replaced it.
    func clearPending(_ name: DiskEntryName, generation: UInt64) {
        state.withLock { state in
            if state.pending[name]?.generation == generation {
                state.pending[name] = nil
                publishActivity(state)
            }
        }
    }

    /// Publishes how much is queued (call with the state lock held, after changing `pending` or `clearsInFlight`),
    /// so queries skip the lock when nothing is.
    func publishActivity(_ state: borrowing DiskCacheState) {
        pendingActivity.store(state.pending.count + state.clearsInFlight, ordering: .releasing)
    }

    /// The metadata written for a store: the caller's, with the key and store time filled in.
    func metadataToWrite(_ metadata: CacheEntryMetadata?, key: String, now: Double) -> CacheEntryMetadata {
        var written = metadata ?? CacheEntryMetadata()
        written.originalKey = key
        written.storedAt = written.storedAt ?? Date(timeIntervalSince1970: now)
        written.lastAccess = nil
        written.size = nil
        return written
    }

    // MARK: Scheduling

    /// Starts jobs the scheduler released: inline ones wake their caller, the others go to the write pool.
    func launch(_ jobs: [DiskJob]) {
        for job in jobs {
            if job.inline {
                _ = job.work.perform()
                continue
            }
            writePool.submit {
                let then = job.work.perform()
                self.finished(job)
                then?()
                self.settled(job)
            }
        }
    }

    /// Records that `job` finished and starts what may run next.
    func finished(_ job: DiskJob) {
        launch(state.withLock { $0.scheduler.finish(job) })
    }

    /// Records that `job`'s completion ran too, and runs the waits for pending writes it released.
    func settled(_ job: DiskJob) {
        for fence in state.withLock({ $0.scheduler.settle(job) }) { _ = fence.perform() }
    }

    /// Runs `body` on the caller's thread as an inline job of `lane` (nil: a barrier), after waiting its turn.
    func runInline<T>(lane: DiskEntryName?, _ body: () throws -> T) rethrows -> T {
        let waiter = DispatchSemaphore(value: 0)
        let work = DiskJobWork {
            waiter.signal()
            return nil
        }
        let job: DiskJob
        switch state.withLock({ $0.scheduler.submit(lane: lane, inline: true, work: work) }) {
        case .start(let started):
            job = started
        case .queued(let queued):
            waiter.wait()
            job = queued
        case .rejected:
            // The scheduler never rejects inline jobs; run unordered rather than not at all.
            return try body()
        }
        defer {
            finished(job)
            settled(job)
        }
        return try body()
    }

    // MARK: Work

    /// Writes one entry, then sweeps when the known total passed the limit or enough bytes were written.
    ///
    /// Runs on a write-pool thread or a blocking caller's, as a job of the entry's lane; when it returns with
    /// success and the cache has a size limit, a sweep that saw this entry has enforced the limit.
    func performStore(
        name: DiskEntryName, key: String, data: Data, metadata: CacheEntryMetadata?
    ) -> Result<Void, ImageError> {
        let now = now()
        let limit = limits.maxDiskSize
        let maxEntry = limits.effectiveMaxEntrySize
        if data.count > maxEntry {
            return .failure(
                ImageError(
                    .cacheFailure, stage: .cacheStore,
                    message: "entry of \(data.count) bytes exceeds the entry size limit of \(maxEntry) bytes"))
        }
        let written = metadataToWrite(metadata, key: key, now: now)
        let sizes: (written: Int, replaced: Int)
        do {
            sizes = try store.write(name: name, data: data, metadata: written, now: now, measuresReplaced: limit > 0)
        } catch {
            return .failure(Self.failure(error, stage: .cacheStore))
        }
        let afterBytes = limits.sweepAfterBytesWritten
        let (sequence, needsSweep) = state.withLock { state -> (UInt64, Bool) in
            state.writeSequence &+= 1
            state.trackedSize += sizes.written - sizes.replaced
            state.bytesSinceSweep += sizes.written
            if state.sweeping { state.writtenDuringSweep += sizes.written - sizes.replaced }
            let needed = (limit > 0 && state.trackedSize > limit) || state.bytesSinceSweep >= afterBytes
            return (state.writeSequence, needed)
        }
        if needsSweep { runSweep(trigger: .writes, covering: sequence) }
        return .success(())
    }

    func performRemove(name: DiskEntryName) {
        guard let removed = try? store.remove(name: name), removed > 0 else { return }
        state.withLock { $0.trackedSize = max(0, $0.trackedSize - removed) }
    }

    func performRemoveAll() {
        sweepLock.withLock { _ in
            let report = try? store.sweep(now: now(), maxSize: 0, lowWater: 0, removeEverything: true)
            state.withLock {
                $0.trackedSize = report?.totalSize ?? 0
                $0.bytesSinceSweep = 0
            }
        }
    }

    /// Sweeps the directory and resynchronizes the tracked size with what is really there.
    ///
    /// Sweeps run one at a time (the sweep lock) but beside stores. With `covering`, the sweep is skipped when a
    /// trimming sweep that started after write number `covering` was published has run meanwhile: that one saw
    /// the write and enforced the limit.
    func runSweep(trigger: SweepTrigger, trim: Bool = true, covering: UInt64? = nil) {
        let (report, becameForeign) = sweepLock.withLock { record -> (SweepReport?, Bool) in
            if let covering, record.lastTrimStart >= covering { return (nil, false) }
            let ownershipBefore = store.ownership.value
            let start = state.withLock { state -> UInt64 in
                state.sweeping = true
                state.writtenDuringSweep = 0
                return state.writeSequence
            }
            let report = try? store.sweep(
                now: now(), maxSize: trim ? limits.maxDiskSize : 0, lowWater: limits.lowWaterMark)
            state.withLock { state in
                state.sweeping = false
                // Writes published during the walk may or may not be in the report: count them again (an
                // over-estimate only brings the next sweep forward).
                if let report { state.trackedSize = report.totalSize + state.writtenDuringSweep }
                state.bytesSinceSweep = state.writtenDuringSweep
            }
            if trim && report != nil { record.lastTrimStart = start }
            return (report, ownershipBefore != .foreign && store.ownership.isForeign)
        }
        if becameForeign {
            initialConfiguration.logger.warning(
                "disk cache directory is not the cache's: it keeps nothing there and deletes nothing there",
                metadata: [
                    "directory": "\(store.directory)",
                    "reason": "not empty and no \(DiskEntryStore.markerName) marker (use a new or empty directory)",
                ])
        }
        if let report { initialConfiguration.onSweep?(trigger, report) }
    }

    /// Moves the entries of `oldDirectory` here. Both directories must be the cache's: the old one carries the
    /// marker (entries are moved out of it, and the old copy of a key held here is deleted), and this one is
    /// owned or adopted; otherwise nothing moves and the result is `cacheFailure` caused by
    /// ``DiskCacheDirectoryNotOwned``.
    func performMigration(from oldDirectory: String) -> Result<Int, ImageError> {
        guard oldDirectory != store.directory else { return .success(0) }
        var oldConfiguration = initialConfiguration
        oldConfiguration.maxDiskAge = nil
        let old = DiskEntryStore(
            directory: oldDirectory, fs: store.fs, limits: DiskCacheLimits(configuration: oldConfiguration),
            accessTimeGranularity: .infinity,
            fsyncOnWrite: false, stampsWrites: false)
        let listing: (files: [DirectoryItem], others: [String])?
        do {
            listing = try store.fs.listDirectory(oldDirectory)
            guard let listing else { return .success(0) }
            guard listing.files.contains(where: { $0.name == DiskEntryStore.markerName }) else {
                throw DiskCacheDirectoryNotOwned(directory: oldDirectory)
            }
            old.ownership.value = .owned
            try store.checkWritable()
        } catch {
            return .failure(Self.failure(error, stage: .cacheStore))
        }
        var moved = 0
        for item in listing?.files ?? [] where DiskFileNaming.isEntryName(item.name) {
            if migrateEntry(item, from: old) { moved += 1 }
        }
        // The old directory goes when nothing but its marker is left in it.
        if let left = try? store.fs.listDirectory(oldDirectory), left.others.isEmpty,
            left.files.map(\.name) == [DiskEntryStore.markerName]
        {
            _ = try? store.fs.remove(old.path(DiskEntryStore.markerName))
        }
        rmdir(oldDirectory)
        runSweep(trigger: .migration)
        return .success(moved)
    }

    /// Moves one old entry: rename when it is valid and new here, else leave or drop it.
    private func migrateEntry(_ item: DirectoryItem, from old: DiskEntryStore) -> Bool {
        let oldPath = old.path(item.name)
        let maxEntry = limits.effectiveMaxEntrySize
        // Never read a file larger than an entry may be.
        guard item.size - DiskEntryCodec.fixedHeaderSize - DiskEntryCodec.maxMetadataSize <= maxEntry,
            let data = FileManager.default.contents(atPath: oldPath),
            let metadata = data.withUnsafeBytes({ DiskEntryCodec.parse($0, maxBodySize: maxEntry)?.metadata }),
            let key = metadata.originalKey
        else { return false }
        let name = DiskFileNaming.entryName(forKey: key)
        // A file not named after the key it holds is not an entry of that key.
        guard name.fileName == item.name else { return false }
        if store.contains(name: name, now: now()) {
            _ = try? store.fs.remove(oldPath)
            return false
        }
        do {
            try store.fs.move(oldPath, to: store.path(name))
        } catch {
            // Another file system (EXDEV) or a name clash: copy through a temporary file instead.
            var entry = DiskCacheEntry.empty
            guard
                case .hit? = try? old.read(
                    name: name, key: key, now: item.accessTime, maxBodySize: maxEntry, into: &entry),
                (try? store.write(name: name, data: entry.data, metadata: entry.metadata, now: now())) != nil
            else { return false }
            _ = try? store.fs.remove(oldPath)
        }
        return true
    }
}
