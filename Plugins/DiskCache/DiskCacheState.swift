import Foundation
import ImageCore

/// The in-memory bookkeeping of a ``DiskCache``, kept in its `Mutex`.
struct DiskCacheState {
    /// A write or removal queued but not yet done, so queries see it at once.
    struct Pending {
        let generation: UInt64
        /// The entry a queued store will write, or nil for a queued removal.
        let entry: DiskCacheEntry?
    }

    /// Entry bytes in the directory as of the last sweep, plus this process's writes since.
    var trackedSize = 0
    /// Bytes written since the last sweep.
    var bytesSinceSweep = 0
    /// Queued stores and removals by file name.
    var pending: [String: Pending] = [:]
    /// Clears queued but not yet done: until then, keys without a pending store are misses.
    var clearsInFlight = 0
    var generation: UInt64 = 0

    mutating func nextGeneration() -> UInt64 {
        generation &+= 1
        return generation
    }
}

extension DiskCache {
    /// What a query should answer for `name` before touching the disk: `.some(entry or nil)` when a store,
    /// removal or clear is queued; nil to read the file.
    func pendingValue(_ name: String) -> DiskCacheState.Pending? {
        state.withLock { state in
            if let pending = state.pending[name] { return pending }
            return state.clearsInFlight > 0 ? DiskCacheState.Pending(generation: 0, entry: nil) : nil
        }
    }

    /// Records a queued store or removal; returns its generation.
    func markPending(_ name: String, entry: DiskCacheEntry?) -> UInt64 {
        state.withLock { state in
            let generation = state.nextGeneration()
            state.pending[name] = DiskCacheState.Pending(generation: generation, entry: entry)
            return generation
        }
    }

    /// Forgets the pending record of `name` if no later operation replaced it.
    func clearPending(_ name: String, generation: UInt64) {
        state.withLock { state in
            if state.pending[name]?.generation == generation { state.pending[name] = nil }
        }
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

    // MARK: Work on the write queue

    /// Writes one entry, then sweeps when the known total passed the limit or enough bytes were written.
    func performStore(name: String, key: String, data: Data, metadata: CacheEntryMetadata?) -> Result<Void, ImageError>
    {
        let now = now()
        let limit = configuration.maxDiskSize
        let written = metadataToWrite(metadata, key: key, now: now)
        if limit > 0 && data.count > limit {
            return .failure(
                ImageError(
                    .cacheFailure, stage: .cacheStore,
                    message: "entry of \(data.count) bytes exceeds maxDiskSize \(limit)"))
        }
        let sizes: (written: Int, replaced: Int)
        do {
            sizes = try store.write(name: name, data: data, metadata: written, now: now)
        } catch {
            return .failure(Self.failure(error, stage: .cacheStore))
        }
        let afterBytes = configuration.sweepAfterBytesWritten
        let needsSweep = state.withLock { state -> Bool in
            state.trackedSize += sizes.written - sizes.replaced
            state.bytesSinceSweep += sizes.written
            return (limit > 0 && state.trackedSize > limit) || state.bytesSinceSweep >= afterBytes
        }
        if needsSweep { runSweep() }
        return .success(())
    }

    func performRemove(name: String) {
        guard let removed = try? store.remove(name: name), removed > 0 else { return }
        state.withLock { $0.trackedSize = max(0, $0.trackedSize - removed) }
    }

    func performRemoveAll() {
        let report = try? store.sweep(now: now(), maxSize: 0, lowWater: 0, removeEverything: true)
        state.withLock {
            $0.trackedSize = report?.totalSize ?? 0
            $0.bytesSinceSweep = 0
        }
    }

    /// Sweeps the directory and resynchronizes the tracked size with what is really there.
    func runSweep(trim: Bool = true) {
        let report = try? store.sweep(
            now: now(), maxSize: trim ? configuration.maxDiskSize : 0, lowWater: configuration.lowWaterMark)
        guard let report else { return }
        state.withLock {
            $0.trackedSize = report.totalSize
            $0.bytesSinceSweep = 0
        }
    }

    func performMigration(from oldDirectory: String) -> Result<Int, ImageError> {
        guard oldDirectory != store.directory else { return .success(0) }
        let old = DiskEntryStore(
            directory: oldDirectory, fs: store.fs, maxDiskAge: nil, accessTimeGranularity: .infinity,
            fsyncOnWrite: false, stampsWrites: false)
        let listing: (files: [DirectoryItem], others: [String])?
        do {
            listing = try store.fs.listDirectory(oldDirectory)
        } catch {
            return .failure(Self.failure(error, stage: .cacheStore))
        }
        guard let listing else { return .success(0) }
        var moved = 0
        for item in listing.files where DiskFileNaming.isEntryName(item.name) {
            if migrateEntry(item, from: old) { moved += 1 }
        }
        if (try? store.fs.listDirectory(oldDirectory))??.files.map(\.name) == [DiskEntryStore.markerName] {
            _ = try? store.fs.remove(old.path(DiskEntryStore.markerName))
        }
        rmdir(oldDirectory)
        runSweep()
        return .success(moved)
    }

    /// Moves one old entry: rename when it is valid and new here, else leave or drop it.
    private func migrateEntry(_ item: DirectoryItem, from old: DiskEntryStore) -> Bool {
        let oldPath = old.path(item.name)
        guard let data = FileManager.default.contents(atPath: oldPath),
            let metadata = data.withUnsafeBytes({ DiskEntryCodec.parse($0)?.metadata }),
            let key = metadata.originalKey
        else { return false }
        let name = DiskFileNaming.fileName(forKey: key)
        if store.contains(name: name, now: now()) {
            _ = try? store.fs.remove(oldPath)
            return false
        }
        try? store.makeOwnedDirectory()
        do {
            try store.fs.move(oldPath, to: store.path(name))
        } catch {
            // Another file system (EXDEV) or a name clash: copy through a temporary file instead.
            guard let entry = try? old.read(name: item.name, key: key, now: item.accessTime),
                (try? store.write(name: name, data: entry.data, metadata: metadata, now: now())) != nil
            else { return false }
            _ = try? store.fs.remove(oldPath)
        }
        return true
    }
}
