import Foundation
import Synchronization

/// Facts stored with a cache entry; the HTTP loader's revalidation reads the validators.
public struct CacheEntryMetadata: Hashable, Sendable, Codable {
    /// The cache key as given (file names are hashes of it).
    public var originalKey: String?
    /// Content type of the stored bytes.
    public var contentType: String?
    /// `ETag` of the response the bytes came from.
    public var etag: String?
    /// `Last-Modified` of that response.
    public var lastModified: String?
    /// `Cache-Control: max-age` of that response, seconds.
    public var maxAge: Int?
    /// When the entry stops being fresh (from max-age), if known.
    public var expiresAt: Date?
    /// When the entry was stored.
    public var storedAt: Date?
    /// When the entry was last read, as maintained by the cache.
    public var lastAccess: Date?
    /// Size of the stored bytes.
    public var size: Int?
    /// The caller's own small blob stored with the entry and returned with it (SDWebImage's `extendedData`, what
    /// `SDImageCache` keeps for an image's `sd_extendedObject`). Levels that keep it say so and bound its size
    /// (DiskCache: 2 KiB); nil when the entry has none.
    public var extendedData: Data?

    /// Creates metadata.
    public init(
        originalKey: String? = nil, contentType: String? = nil, etag: String? = nil, lastModified: String? = nil,
        maxAge: Int? = nil, expiresAt: Date? = nil, storedAt: Date? = nil, lastAccess: Date? = nil, size: Int? = nil,
        extendedData: Data? = nil
    ) {
        self.originalKey = originalKey
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.maxAge = maxAge
        self.expiresAt = expiresAt
        self.storedAt = storedAt
        self.lastAccess = lastAccess
        self.size = size
        self.extendedData = extendedData
    }

    /// Metadata for bytes that came with `response` (its ``ResponseMetadata/extendedData`` included).
    public init(response: ResponseMetadata, key: String?, now: Date = Date()) {
        self.init(
            originalKey: key, contentType: response.contentType, etag: response.etag,
            lastModified: response.lastModified, maxAge: response.maxAge,
            expiresAt: response.maxAge.map { now.addingTimeInterval(TimeInterval($0)) }, storedAt: now,
            extendedData: response.extendedData)
    }
}

/// What a cache query found.
///
/// The bytes and metadata live in one shared box, so copying a result (every hit is passed along several times)
/// costs a retain, not a trip through `Data`'s and `Date`'s value witnesses.
public struct CacheQueryResult: Sendable {
    /// A decoded image (memory level).
    public var image: Image?
    /// The stored bytes (disk level, or memory with ``ImageOptions/queryMemoryData``).
    public var data: Data? {
        get { extras?.data }
        set { extras = Extras.make(data: newValue, metadata: metadata) }
    }
    /// The entry's metadata, if the level keeps any.
    public var metadata: CacheEntryMetadata? {
        get { extras?.metadata }
        set { extras = Extras.make(data: data, metadata: newValue) }
    }
    /// Which level answered.
    public var cacheType: ImageCacheType
    /// Which cache answered, as its position in the list of the ``CachesManager`` that asked it (the one that had
    /// the image, or the bytes when there is no image); nil from a cache asked on its own. Lets a caller count
    /// hits per cache, where ``cacheType`` names only memory or disk.
    public var answeredBy: Int?
    private var extras: Extras?

    /// Creates a result.
    public init(image: Image? = nil, data: Data? = nil, metadata: CacheEntryMetadata? = nil, cacheType: ImageCacheType)
    {
        self.image = image
        self.cacheType = cacheType
        self.extras = Extras.make(data: data, metadata: metadata)
    }

    /// A result holding only an image: what a memory level finds for an entry stored without bytes or metadata.
    ///
    /// Cheaper than the memberwise initializer, which has to look at the optional bytes and metadata; `image` is
    /// consumed, so a cache hands over the reference its lookup took instead of the result retaining it again.
    public static func image(_ image: consuming Image, cacheType: ImageCacheType) -> CacheQueryResult {
        CacheQueryResult(image: image, cacheType: cacheType, extras: nil)
    }

    private init(image: Image?, cacheType: ImageCacheType, extras: Extras?) {
        self.image = image
        self.cacheType = cacheType
        self.extras = extras
    }

    private final class Extras: Sendable {
        let data: Data?
        let metadata: CacheEntryMetadata?

        init(data: Data?, metadata: CacheEntryMetadata?) {
            self.data = data
            self.metadata = metadata
        }

        static func make(data: Data?, metadata: CacheEntryMetadata?) -> Extras? {
            data == nil && metadata == nil ? nil : Extras(data: data, metadata: metadata)
        }
    }
}

/// The answer of ``ImageCacheProtocol/queryImageSync(forKey:options:context:cacheType:)``.
public enum SyncCacheQueryResult: Sendable {
    /// Found: the same result ``ImageCacheProtocol/queryImage(forKey:options:context:cacheType:completion:)``
    /// would complete with.
    case hit(CacheQueryResult)
    /// No level of `cacheType` holds the key: the asynchronous query would complete with nil.
    case miss
    /// The cache can't answer on the caller's thread (it has a disk or remote level in `cacheType`, or doesn't
    /// implement the synchronous query): use the asynchronous one.
    case needsAsyncQuery
}

/// A cache of images and their bytes, by key: memory, disk, or a composite of several.
///
/// Semantics: every call names the levels it touches (`cacheType`); a cache acts only on the levels it has
/// (a memory cache ignores `.disk` and answers nothing for it) so a composite can pass calls down unchanged.
/// Caches store *bytes as given* and/or *decoded images*; they never decode — the manager decodes disk hits on
/// its CPU pool, once, and promotes them by storing the image with `cacheType: .memory`.
///
/// Threading: all methods are thread-safe. A memory level answers synchronously on the caller's thread. A disk
/// level answers on its own I/O queue, except with ``ImageOptions/queryDiskDataSync`` where it answers before
/// returning. Completions are called exactly once and never under the cache's lock.
public protocol ImageCacheProtocol: Sendable {
    /// Looks `key` up in the levels of `cacheType`.
    ///
    /// Completes with nil on a miss, with an error only when a level failed in a way the caller should know
    /// (a corrupt entry is a miss). Returns an operation that cancels a pending query, or nil if it completed.
    ///
    /// Cancel contract (SDWebImage's `SDImageCacheToken`): cancelling a query that has not answered completes it
    /// with `cancelled` at the cancel — on the cancelling thread before `cancel()` returns, or, for a cache whose
    /// completions always run on its own queue, queued there then — and the answer found later is dropped; the
    /// completion still runs exactly once. Return a ``CacheQueryOperation`` to get this for free.
    @discardableResult
    func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)?

    /// Looks `key` up like ``queryImage(forKey:options:context:cacheType:completion:)``, and on a miss may hold
    /// something for the key until the caller says how its fetch ended: a fleet lease that makes other processes
    /// wait for this one's fetch (RedisCache).
    ///
    /// Ownership: what a miss holds is the caller's. For every query of this kind that completes with nil, the
    /// caller calls ``missEnded(forKey:cacheType:outcome:)`` exactly once, on every way out (a store, a failure, a
    /// cancel, a revalidation that kept the old bytes). On any other answer — a hit, an error, a cancel — the cache
    /// holds nothing for the caller: it ended whatever it took itself. The plain query never holds anything, so a
    /// caller who never ends misses never stalls another process. The manager asks this way for the keys whose
    /// misses it claims (`MissClaim`). Default: the plain query (nothing is held).
    @discardableResult
    func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)?

    /// Answers a query on the caller's thread, without a completion, when the cache can (a memory level).
    ///
    /// What the manager asks first on every load, so a memory hit costs no closure, no allocation and no hop.
    /// ``SyncCacheQueryResult/hit(_:)`` and ``SyncCacheQueryResult/miss`` must be exactly what
    /// ``queryImage(forKey:options:context:cacheType:completion:)`` would complete with (a hit counts as a use
    /// the same way); anything the cache can't decide without blocking is
    /// ``SyncCacheQueryResult/needsAsyncQuery``. Must be fast and never block on I/O.
    /// Default: ``SyncCacheQueryResult/needsAsyncQuery``.
    func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult

    /// Stores `image` and/or `data` under `key` in the levels of `cacheType`.
    ///
    /// Memory levels store the image (ignoring it if nil); disk levels store `data` (ignoring it if nil) with
    /// `metadata`. A failure leaves any previous entry for `key` intact and is reported as `cacheFailure`.
    func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?)

    /// Removes `key` from the levels of `cacheType`.
    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?)

    /// Reports which of the levels of `cacheType` hold `key`.
    func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void)

    /// Removes everything from the levels of `cacheType`.
    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?)

    /// Ends whatever this cache holds for `key` since a query of the levels of `cacheType` missed it — a fleet
    /// lease that makes other processes wait for this one's fetch (see RedisCache).
    ///
    /// The manager calls it once for every query of a load that missed, when that load — and every load that
    /// shared its fetch — is done with the key: after the store (or the decision not to store), after a failure,
    /// after the last cancel. `outcome` says which, so a cache can tell waiters to fetch for themselves
    /// (``CacheMissOutcome/notStored``) or let one of them take the fetch over (``CacheMissOutcome/abandoned``).
    /// Called off the caller's thread, never under a lock; must be fast (start I/O, don't wait for it).
    /// Default: nothing (memory and disk levels hold nothing for a miss).
    func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome)

    /// Calls `completion` once every store, removal and clear handed to this cache before the call is done —
    /// written, or failed — so a short program can exit without losing what it stored (Nuke's
    /// `DataCache.flush()`; SDWebImage's `storeImage` completion, for all stores at once).
    ///
    /// Work handed over after the call is not waited for. A level that writes before `store` returns (a memory
    /// level) has nothing pending. The await form is ``waitForPendingWrites()``; through a ``CachesManager``
    /// it waits for every level. Stores the manager has not handed to the cache yet (a derived image still being
    /// encoded) are not covered: a load with ``ImageOptions/waitStoreCache`` completes after its own stores.
    /// `completion` runs on a thread of the cache (or the caller's, when nothing is pending), never under a lock.
    /// Default: calls `completion` at once.
    func waitForPendingWrites(completion: @escaping @Sendable () -> Void)
}

/// How the fetch that followed a cache miss ended (see ``ImageCacheProtocol/missEnded(forKey:cacheType:outcome:)``).
public enum CacheMissOutcome: Sendable, Hashable {
    /// The result was handed to ``ImageCacheProtocol/store(_:data:metadata:forKey:cacheType:completion:)`` with
    /// bytes for the key's disk levels (the cache itself knows whether it kept them).
    case stored
    /// The fetch ended and stores nothing under the key: the response said `no-store` or 404, the bytes don't
    /// decode, the result is a variant the key doesn't mean, the serializer gave no bytes, the encode was dropped.
    /// Another process waiting for the key will not get it from this one.
    case notStored
    /// Nobody here wants the key any more (cancelled) or the fetch failed in a way that may pass (a timeout, a
    /// 5xx, a lost connection): another process may take the fetch over.
    case abandoned
}

extension ImageCacheProtocol {
    /// Default: the plain query; nothing is held for a missing key.
    @discardableResult
    public func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        queryImage(forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
    }

    /// Default: nothing is held for a missing key.
    public func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {}

    /// Default: nothing is pending (the cache writes before `store` returns).
    public func waitForPendingWrites(completion: @escaping @Sendable () -> Void) { completion() }

    /// Returns once every store, removal and clear handed to this cache before the call is written or failed (see
    /// ``waitForPendingWrites(completion:)``): await it before a short program exits. Waits even when the task
    /// is cancelled (the writes are under way either way).
    public func waitForPendingWrites() async {
        await withCheckedContinuation { continuation in waitForPendingWrites { continuation.resume() } }
    }

    /// Default: this cache answers only through the asynchronous query.
    public func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult {
        .needsAsyncQuery
    }

    /// Async query; honours task cancellation.
    ///
    /// A task cancelled before the answer — before the call, or while the query runs — throws `cancelled` (stage
    /// ``ImageError/Stage/cacheQuery``) at once, whatever the cache does with its own cancel, and the query's
    /// operation is cancelled (a task cancelled before the call starts no query). An answer that arrives after
    /// the cancel is dropped.
    public func queryImage(
        forKey key: String, options: ImageOptions = [], context: ImageContext = ImageContext(),
        cacheType: ImageCacheType = .all
    ) async throws(ImageError) -> CacheQueryResult? {
        let query = AsyncCacheQuery()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                query.start(continuation) { completion in
                    queryImage(
                        forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
                }
            }
        } onCancel: {
            query.cancel()
        }
        return try result.get()
    }

    /// Async claiming query (``queryImageClaimingMiss(forKey:options:context:cacheType:completion:)``): a nil answer
    /// leaves the caller owning what the miss holds, to end with ``missEnded(forKey:cacheType:outcome:)``.
    ///
    /// Cancellation as the plain async query's. A miss answered after the task's cancel was given up is ended at
    /// once (``CacheMissOutcome/abandoned``): nobody is left to own it.
    public func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions = [], context: ImageContext = ImageContext(),
        cacheType: ImageCacheType = .all
    ) async throws(ImageError) -> CacheQueryResult? {
        let query = AsyncCacheQuery { dropped in
            if case .success(nil) = dropped { missEnded(forKey: key, cacheType: cacheType, outcome: .abandoned) }
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                query.start(continuation) { completion in
                    queryImageClaimingMiss(
                        forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
                }
            }
        } onCancel: {
            query.cancel()
        }
        return try result.get()
    }

    /// Async store.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata? = nil, forKey key: String,
        cacheType: ImageCacheType = .all
    ) async throws(ImageError) {
        let result = await withCheckedContinuation { continuation in
            store(image, data: data, metadata: metadata, forKey: key, cacheType: cacheType) {
                continuation.resume(returning: $0)
            }
        }
        try result.get()
    }

    /// Async remove.
    public func removeImage(forKey key: String, cacheType: ImageCacheType = .all) async {
        await withCheckedContinuation { continuation in
            removeImage(forKey: key, cacheType: cacheType) { continuation.resume() }
        }
    }

    /// Async contains.
    public func containsImage(forKey key: String, cacheType: ImageCacheType = .all) async -> ImageCacheType {
        await withCheckedContinuation { continuation in
            containsImage(forKey: key, cacheType: cacheType) { continuation.resume(returning: $0) }
        }
    }

    /// Async clear.
    public func clear(cacheType: ImageCacheType = .all) async {
        await withCheckedContinuation { continuation in clear(cacheType: cacheType) { continuation.resume() } }
    }
}

/// One callback query bridged to `async`: resumes its continuation exactly once — with the answer, or with
/// `cancelled` at the task's cancel — and cancels the query's operation on that cancel.
///
/// Thread-safe: the state sits behind a `Mutex`; the continuation is resumed and the operation cancelled after
/// the lock is released. The task's cancel may come before the query starts (`withTaskCancellationHandler` then
/// runs it first), while it starts (before its operation is known), or after.
private final class AsyncCacheQuery: Sendable {
    typealias Answer = Result<CacheQueryResult?, ImageError>

    private struct State {
        var continuation: CheckedContinuation<Answer, Never>?
        var operation: (any ImageOperation)?
        var cancelled = false
    }

    private let state = Mutex(State())
    /// Gets an answer that came after the task's cancel resumed the caller (a claiming query's miss must be ended).
    private let dropped: @Sendable (Answer) -> Void

    init(dropped: @escaping @Sendable (Answer) -> Void = { _ in }) { self.dropped = dropped }

    /// Starts the query (unless the task was already cancelled) with a completion that resumes `continuation`.
    func start(
        _ continuation: CheckedContinuation<Answer, Never>,
        query: (_ completion: @escaping @Sendable (Answer) -> Void) -> (any ImageOperation)?
    ) {
        let cancelled = state.withLock { state -> Bool in
            if !state.cancelled { state.continuation = continuation }
            return state.cancelled
        }
        if cancelled { return continuation.resume(returning: .failure(.cancelled(stage: .cacheQuery))) }
        guard let operation = query({ answer in self.finish(answer) }) else { return }
        let cancelNow = state.withLock { state -> Bool in
            // Still waiting for the answer: keep the operation for a later cancel.
            if !state.cancelled && state.continuation != nil { state.operation = operation }
            return state.cancelled
        }
        // The task was cancelled while the query started: the cancel resumed already, stop the query too.
        if cancelNow { operation.cancel() }
    }

    private func finish(_ answer: Answer) {
        let continuation = state.withLock { state -> CheckedContinuation<Answer, Never>? in
            defer {
                state.continuation = nil
                state.operation = nil
            }
            return state.continuation
        }
        guard let continuation else { return dropped(answer) }
        continuation.resume(returning: answer)
    }

    /// The task's cancel: resumes with `cancelled` unless the answer came first, and cancels the query.
    func cancel() {
        let (continuation, operation) = state.withLock {
            state -> (CheckedContinuation<Answer, Never>?, (any ImageOperation)?) in
            state.cancelled = true
            defer {
                state.continuation = nil
                state.operation = nil
            }
            return (state.continuation, state.operation)
        }
        continuation?.resume(returning: .failure(.cancelled(stage: .cacheQuery)))
        operation?.cancel()
    }
}
