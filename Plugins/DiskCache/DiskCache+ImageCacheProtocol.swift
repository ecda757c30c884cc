import Foundation
import ImageCore

extension DiskCache {
    /// Looks `key` up on disk when `cacheType` has `.disk`.
    ///
    /// Answers on the read pool, or on the caller's thread before returning with
    /// ``/ImageCore/ImageOptions/queryDiskDataSync``. A hit carries the bytes and metadata, never an image (the
    /// manager decodes). Corrupt and expired entries are misses; an unreadable file is a `cacheFailure`.
    /// Returns a ``/ImageCore/CacheQueryOperation`` (nil when the query completed before returning) that keeps the
    /// protocol's cancel contract: cancelling it before the answer completes the query with `cancelled` at once,
    /// on the cancelling thread; a read not started yet is skipped, the answer of one already running is dropped.
    /// In a directory the cache does not own (``DiskCache/ownsDirectory``) every query is a miss.
    @discardableResult
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        guard cacheType.contains(.disk) else {
            completion(.success(nil))
            return nil
        }
        if options.contains(.queryDiskDataSync) {
            completion(queryResult(forKey: key))
            return nil
        }
        let operation = CacheQueryOperation(completion: completion)
        readPool.submit {
            // Cancelled before the read: it already completed with `cancelled`.
            guard !operation.isFinished else { return }
            operation.complete(self.queryResult(forKey: key))
        }
        return operation
    }

    private func queryResult(forKey key: String) -> Result<CacheQueryResult?, ImageError> {
        Result { () throws(ImageError) in
            try entry(forKey: key).map {
                CacheQueryResult(image: nil, data: $0.data, metadata: $0.metadata, cacheType: .disk)
            }
        }
    }

    /// Stores `data` with `metadata` when `cacheType` has `.disk` and `data` is not nil; `image` is ignored.
    ///
    /// `metadata.extendedData` is stored with the entry and comes back with its hits; more than
    /// ``maxExtendedDataSize`` bytes of it fail the store at once with `cacheFailure` caused by
    /// ``DiskCacheExtendedDataTooLarge``.
    ///
    /// Visible to queries at once; written on the write pool after any earlier work on the same key (stores of
    /// one key land in call order), after which the completion runs there (await it for
    /// ``/ImageCore/ImageOptions/waitStoreCache``; completions of one key's stores may run in any order). A failure
    /// leaves the previous entry intact. When the write backlog is full the store is dropped: the completion gets
    /// `cacheFailure` caused by ``DiskCacheWriteBacklogFull`` before this returns, and queries keep answering
    /// with the previous entry. In a directory the cache does not own (``DiskCache/ownsDirectory``) the
    /// completion gets `cacheFailure` caused by ``DiskCacheDirectoryNotOwned``.
    /// ``waitForPendingWrites(completion:)`` calls back once every store made before it is written (or failed).
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        guard cacheType.contains(.disk), let data else {
            completion?(.success(()))
            return
        }
        do {
            try DiskExtendedData.check(metadata?.extendedData, stage: .cacheStore)
            // Known foreign: fail now rather than show queries an entry that will never be written.
            if store.ownership.isForeign { throw DiskCacheDirectoryNotOwned(directory: store.directory) }
        } catch {
            completion?(.failure(Self.failure(error, stage: .cacheStore)))
            return
        }
        let name = DiskFileNaming.entryName(forKey: key)
        let now = now()
        var visible = metadataToWrite(metadata, key: key, now: now)
        visible.size = data.count
        visible.lastAccess = Date(timeIntervalSince1970: now)
        let entry = DiskCacheEntry(data: data, metadata: visible)
        let outcome = submitStore(name: name, entry: entry) { generation in
            DiskJobWork { [self] in
                let result = performStore(name: name, key: key, data: data, metadata: metadata)
                clearPending(name, generation: generation)
                guard let completion else { return nil }
                return { completion(result) }
            }
        }
        switch outcome {
        case .accepted(let job):
            metrics.recordAccepted()
            if let job { launch([job]) }
        case .dropped(let error):
            metrics.recordDrop(error, logger: initialConfiguration.logger)
            completion?(
                .failure(
                    ImageError(.cacheFailure, stage: .cacheStore, message: error.description, underlying: error)))
        }
    }

    private enum StoreOutcome {
        /// Taken; the job when it may start now.
        case accepted(DiskJob?)
        case dropped(DiskCacheWriteBacklogFull)
    }

    /// Submits an asynchronous store and, when taken, makes it visible to queries (one lock for both, so a
    /// query never sees a store that was dropped).
    private func submitStore(
        name: DiskEntryName, entry: DiskCacheEntry, makeWork: (_ generation: UInt64) -> DiskJobWork
    ) -> StoreOutcome {
        state.withLock { state in
            let generation = state.nextGeneration()
            let submission = state.scheduler.submit(
                lane: name, inline: false, cost: entry.data.count, work: makeWork(generation))
            switch submission {
            case .rejected:
                return .dropped(
                    DiskCacheWriteBacklogFull(
                        queuedJobs: state.scheduler.backlogJobs, queuedBytes: state.scheduler.backlogBytes,
                        droppedBytes: entry.data.count))
            case .start(let job):
                state.pending[name] = DiskCacheState.Pending(generation: generation, entry: entry)
                publishActivity(state)
                return .accepted(job)
            case .queued:
                state.pending[name] = DiskCacheState.Pending(generation: generation, entry: entry)
                publishActivity(state)
                return .accepted(nil)
            }
        }
    }

    /// Removes `key` when `cacheType` has `.disk`; queries miss at once, the file goes after any earlier work on
    /// the same key (never dropped, whatever the backlog).
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        guard cacheType.contains(.disk) else {
            completion?()
            return
        }
        let name = DiskFileNaming.entryName(forKey: key)
        let submission = state.withLock { state in
            let generation = state.nextGeneration()
            state.pending[name] = DiskCacheState.Pending(generation: generation, entry: nil)
            publishActivity(state)
            let work = DiskJobWork {
                self.performRemove(name: name)
                self.clearPending(name, generation: generation)
                return completion
            }
            return state.scheduler.submit(lane: name, inline: false, work: work)
        }
        if case .start(let job) = submission { launch([job]) }
    }

    /// Reports `.disk` when `cacheType` has it and an unexpired entry exists; answers on the read pool.
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        guard cacheType.contains(.disk) else { return completion(.none) }
        readPool.submit { completion(self.containsData(forKey: key) ? .disk : .none) }
    }

    /// Removes every entry when `cacheType` has `.disk`; queries miss at once, the files go on the write queue.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        guard cacheType.contains(.disk) else {
            completion?()
            return
        }
        let generation = state.withLock { state -> UInt64 in
            state.clearsInFlight += 1
            // Stores queued before the clear are wiped by it; hide them now.
            for name in state.pending.keys {
                state.pending[name] = DiskCacheState.Pending(generation: state.generation &+ 1, entry: nil)
            }
            publishActivity(state)
            return state.nextGeneration()
        }
        submitBarrier(
            {
                self.performRemoveAll()
                self.state.withLock { state in
                    state.clearsInFlight -= 1
                    state.pending = state.pending.filter { $0.value.generation > generation }
                    self.publishActivity(state)
                }
            }, then: completion)
    }
}

extension DiskCache {
    /// Calls `completion` once every store, removal and clear made before this call is done — on disk, or failed
    /// (its own completion has run) — so a short program can exit without losing entries (Nuke's
    /// `DataCache.flush()`).
    ///
    /// Holds nothing up: stores made after the call run as usual and are not waited for. Blocking calls
    /// (``storeData(_:metadata:forKey:)`` …) running on other threads count too. `completion` runs on a write-pool
    /// thread once the last of that work settles, or on the caller's thread before this returns when nothing is
    /// pending; never under the cache's lock. The await form is
    /// ``/ImageCore/ImageCacheProtocol/waitForPendingWrites()``.
    public func waitForPendingWrites(completion: @escaping @Sendable () -> Void) {
        let work = DiskJobWork {
            completion()
            return nil
        }
        if let now = state.withLock({ $0.scheduler.fence(work) }) { _ = now.perform() }
    }
}
