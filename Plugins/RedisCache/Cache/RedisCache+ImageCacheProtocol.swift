import Foundation
import ImageCore
import Synchronization

extension RedisCache {
    /// Looks `key` up in Redis when `cacheType` has `.disk`; never takes a fleet lease (see
    /// ``queryImageClaimingMiss(forKey:options:context:cacheType:completion:)``).
    ///
    /// Completes on the cache's queue with the bytes and metadata (`cacheType` `.disk`), or nil for a miss —
    /// including every Redis failure (logged, counted, never reported). A hit is copied to `promotingHitsTo`. Always
    /// answers asynchronously, also with ``/ImageCore/ImageOptions/queryDiskDataSync`` (a network level cannot
    /// answer before returning without blocking the caller's thread). Returns an operation whose cancellation
    /// completes the query with `cancelled` at once.
    @discardableResult
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        query(key, options: options, cacheType: cacheType, claiming: false, completion: completion)
    }

    /// Looks `key` up like ``queryImage(forKey:options:context:cacheType:completion:)``; with fleet coalescing a
    /// miss first takes the key's lease or waits for the process that holds it (see
    /// ``RedisCacheConfiguration/FleetCoalescing``).
    ///
    /// A lease this query took is the caller's when the answer is nil: it ends with the caller's store of the key
    /// or its ``missEnded(forKey:cacheType:outcome:)``. When the query is cancelled after it took the lease, the
    /// cache ends the lease itself (``/ImageCore/CacheMissOutcome/abandoned``: a waiter takes the fetch over).
    @discardableResult
    public func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        query(key, options: options, cacheType: cacheType, claiming: true, completion: completion)
    }

    private func query(
        _ key: String, options: ImageOptions, cacheType: ImageCacheType, claiming: Bool,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        guard cacheType.contains(.disk) else {
            completion(.success(nil))
            return nil
        }
        let once = OnceCompletion(completion, queue: callbackQueue)
        let operation = CancellableOperation()
        let task = Task {
            let found = await self.lookup(key, options: options, claiming: claiming)
            switch found {
            case .miss:
                once.complete(.success(nil))
            case .leased:
                // Cancelled meanwhile: nobody will end the lease this query took, so end it here.
                if !once.complete(.success(nil)) { await endLease(keys(for: key), outcome: .abandoned) }
            case .hit(let data, let metadata):
                promote(data, metadata: metadata, forKey: key)
                once.complete(.success(CacheQueryResult(data: data, metadata: metadata, cacheType: .disk)))
            }
        }
        operation.onCancel {
            task.cancel()
            once.complete(.failure(.cancelled(stage: .cacheQuery)))
        }
        return operation
    }

    /// Stores `data` with `metadata` in Redis when `cacheType` has `.disk` and `data` is not nil (images are
    /// ignored: another process cannot use them). Completes with success on the cache's queue once written — or
    /// once skipped: entries over the cap, an open breaker and Redis failures are logged and counted, not
    /// reported. A write releases this key's fleet-coalescing lease; an entry over the cap turns a lease this
    /// process holds into the "nothing to share" mark, so waiters stop at once.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        guard cacheType.contains(.disk), let data else {
            completion?(.success(()))
            return
        }
        Task {
            await put(data, metadata: metadata, forKey: key)
            if let completion { callbackQueue.async { completion(.success(())) } }
        }
    }

    /// Deletes `key` from Redis when `cacheType` has `.disk`; completes on the cache's queue.
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        guard cacheType.contains(.disk) else {
            completion?()
            return
        }
        Task {
            await delete(key)
            if let completion { callbackQueue.async { completion() } }
        }
    }

    /// Ends this process's fleet lease on `key`, if it holds one, the way `outcome` says (see
    /// ``RedisCacheConfiguration/FleetCoalescing``): deleted for ``/ImageCore/CacheMissOutcome/abandoned`` (a waiter
    /// takes the fetch over), turned into the "nothing to share" mark for ``/ImageCore/CacheMissOutcome/notStored``
    /// (waiters fetch for themselves at once). A store already released it, so after one this is free. Returns at once.
    public func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {
        guard cacheType.contains(.disk), configuration.fleetCoalescing != nil else { return }
        let keys = keys(for: key)
        guard heldLeases.withLock({ $0.contains(keys.lease) }) else { return }
        Task { await endLease(keys, outcome: outcome) }
    }

    /// Reports `.disk` when `cacheType` has it and Redis holds `key` (`.none` when Redis fails).
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        guard cacheType.contains(.disk) else { return completion(.none) }
        Task {
            let found = await exists(key)
            callbackQueue.async { completion(found ? .disk : .none) }
        }
    }

    /// Removes every key with ``RedisCacheConfiguration/keyPrefix`` (on every primary of a cluster) when
    /// `cacheType` has `.disk`.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        guard cacheType.contains(.disk) else {
            completion?()
            return
        }
        Task {
            await removeAll()
            if let completion { callbackQueue.async { completion() } }
        }
    }

    private func promote(_ data: Data, metadata: CacheEntryMetadata, forKey key: String) {
        promotionTarget?.store(nil, data: data, metadata: metadata, forKey: key, cacheType: .disk, completion: nil)
    }
}

/// Calls a completion once, on a queue: the first of the result and a cancellation wins.
final class OnceCompletion<Value: Sendable>: Sendable {
    private let completion: Mutex<(@Sendable (Value) -> Void)?>
    private let queue: DispatchQueue

    init(_ completion: @escaping @Sendable (Value) -> Void, queue: DispatchQueue) {
        self.completion = Mutex(completion)
        self.queue = queue
    }

    /// Delivers `value` unless something was delivered before; true when this call delivered.
    @discardableResult
    func complete(_ value: Value) -> Bool {
        guard
            let completion = completion.withLock({ stored in
                defer { stored = nil }; return stored
            })
        else { return false }
        queue.async { completion(value) }
        return true
    }
}
