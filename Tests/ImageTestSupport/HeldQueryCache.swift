import Foundation
import ImageCore

/// A cache whose asynchronous queries wait until the test releases them, then answer with a hit; what a slow
/// level (a disk on a busy machine, a remote cache) looks like, as a third-party cache might write it.
///
/// Its operations record a cancel but, unless `completesOnCancel`, do nothing else with it: the answer still
/// comes at release (the case the async query's own cancel handling must cover). Thread-safe.
public final class HeldQueryCache: ImageCacheProtocol, Sendable {
    private struct Pending: Sendable {
        let completion: @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
        let operation: CancellableOperation
    }

    private let pending = Locked<[Pending]>([])
    private let counts = Locked((started: 0, cancelled: 0, answered: 0))
    /// Completes a query with `cancelled` inside its operation's `cancel()` (the protocol's contract).
    public let completesOnCancel: Bool

    /// Creates a cache; its queries find `Data([1, 2, 3])` under every key once released.
    public init(completesOnCancel: Bool = false) { self.completesOnCancel = completesOnCancel }

    /// Queries started so far.
    public var queriesStarted: Int { counts.value.started }
    /// Query operations cancelled so far.
    public var queriesCancelled: Int { counts.value.cancelled }
    /// Completions called so far (answers and cancels).
    public var completionsCalled: Int { counts.value.answered }
    /// Queries waiting for ``releaseAll()``.
    public var waiting: Int { pending.value.count }

    /// Answers every waiting query with a hit (even a cancelled one, unless `completesOnCancel` answered it).
    public func releaseAll() {
        let queries = pending.withLock { queries -> [Pending] in
            defer { queries = [] }
            return queries
        }
        for query in queries {
            query.completion(.success(CacheQueryResult(data: Data([1, 2, 3]), cacheType: .disk)))
        }
    }

    /// Waits for ``releaseAll()``; the returned operation records a cancel (and answers it when
    /// `completesOnCancel`).
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        counts.withLock { $0.started += 1 }
        let once = Locked(false)
        let counted: @Sendable (Result<CacheQueryResult?, ImageError>) -> Void = { [counts] result in
            let first = once.withLock { called -> Bool in
                defer { called = true }
                return !called
            }
            guard first else { return }
            counts.withLock { $0.answered += 1 }
            completion(result)
        }
        let operation = CancellableOperation()
        operation.onCancel { [counts, completesOnCancel] in
            counts.withLock { $0.cancelled += 1 }
            if completesOnCancel { counted(.failure(.cancelled(stage: .cacheQuery))) }
        }
        pending.withLock { $0.append(Pending(completion: counted, operation: operation)) }
        return operation
    }

    /// Stores nothing.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) { completion?(.success(())) }

    /// Removes nothing.
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        completion?()
    }

    /// Holds nothing.
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) { completion(.none) }

    /// Clears nothing.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) { completion?() }
}
