import Foundation
import Synchronization

/// An ordered set of caches that acts as one cache.
///
/// Order is priority: the **first** cache is the highest priority and is asked first (put the memory cache
/// before the disk cache). Each operation has its own ``Policy``; the defaults give SDWebImage's two-level
/// behaviour: query serially (memory, then disk, first hit wins), store / remove / clear on every cache
/// concurrently, contains serially. Each cache acts only on the levels it has, so the `cacheType` of a call
/// passes down unchanged.
///
/// Thread-safe: the list and policies sit behind a `Mutex`; calls work on a snapshot.
public final class CachesManager: ImageCacheProtocol, Sendable {
    /// How an operation is spread over the caches.
    public enum Policy: Sendable, Hashable {
        /// Only the first (highest-priority) cache.
        case highestOnly
        /// Only the last (lowest-priority) cache.
        case lowestOnly
        /// All caches at once; a query returns the highest-priority hit.
        case concurrent
        /// One after the other in priority order; a query stops at the first hit.
        case serial
    }

    private struct State {
        var caches: [any ImageCacheProtocol]
        var queryPolicy = Policy.serial
        var storePolicy = Policy.concurrent
        var removePolicy = Policy.concurrent
        var containsPolicy = Policy.serial
        var clearPolicy = Policy.concurrent
        var promotesHits = false
    }

    private let state: Mutex<State>

    /// Creates a manager over `caches`, highest priority first.
    public init(_ caches: [any ImageCacheProtocol] = []) { state = Mutex(State(caches: caches)) }

    /// The caches, highest priority first.
    public var caches: [any ImageCacheProtocol] {
        get { state.withLock { $0.caches } }
        set { state.withLock { $0.caches = newValue } }
    }
    /// Appends `cache` with the lowest priority.
    public func addCache(_ cache: any ImageCacheProtocol) { state.withLock { $0.caches.append(cache) } }
    /// Policy for queries (default serial).
    public var queryPolicy: Policy {
        get { state.withLock { $0.queryPolicy } }
        set { state.withLock { $0.queryPolicy = newValue } }
    }
    /// Policy for stores (default concurrent).
    public var storePolicy: Policy {
        get { state.withLock { $0.storePolicy } }
        set { state.withLock { $0.storePolicy = newValue } }
    }
    /// Policy for removals (default concurrent).
    public var removePolicy: Policy {
        get { state.withLock { $0.removePolicy } }
        set { state.withLock { $0.removePolicy = newValue } }
    }
    /// Policy for contains (default serial: the union of the levels that hold the key).
    public var containsPolicy: Policy {
        get { state.withLock { $0.containsPolicy } }
        set { state.withLock { $0.containsPolicy = newValue } }
    }
    /// Policy for clear (default concurrent).
    public var clearPolicy: Policy {
        get { state.withLock { $0.clearPolicy } }
        set { state.withLock { $0.clearPolicy = newValue } }
    }

    /// Store a query's hit on the caches before the one that answered (default false).
    ///
    /// On, a hit from a lower cache (say the disk, or a fleet's Redis) is stored, with its image, bytes and
    /// metadata and at every level, on each cache of higher priority (the memory, and the disk for a Redis hit),
    /// so the next query for the key stops higher: SDImageCache's disk-to-memory copy, for any stack of caches.
    /// The stores start when the hit is found, before the answer, and are not waited for (a memory level that stores
    /// on the caller's thread has the copy before the answer); a memory cache keeps bytes without an image only
    /// when configured to (`MemoryCacheConfiguration.keepsDataAlone`). A hit is copied as the cache that answered
    /// had it: bytes a lower cache added for ``ImageOptions/queryMemoryData`` are not.
    public var promotesHits: Bool {
        get { state.withLock { $0.promotesHits } }
        set { state.withLock { $0.promotesHits = newValue } }
    }

    private func targets(_ policy: Policy) -> [any ImageCacheProtocol] {
        targetsAndOffset(policy).caches
    }

    /// The caches an operation of `policy` asks, and the position of the first in the whole list.
    private func targetsAndOffset(_ policy: Policy) -> (caches: [any ImageCacheProtocol], offset: Int) {
        let caches = self.caches
        switch policy {
        case .highestOnly: return (caches.first.map { [$0] } ?? [], 0)
        case .lowestOnly: return (caches.last.map { [$0] } ?? [], max(0, caches.count - 1))
        case .concurrent, .serial: return (caches, 0)
        }
    }

    /// What one query asks: the caches (per ``queryPolicy``), where the first sits in the whole list, and
    /// whether hits are promoted.
    private struct QueryScope: Sendable {
        let caches: [any ImageCacheProtocol]
        let offset: Int
        let promotes: Bool

        /// Names the cache that answered (`position` in ``caches``) and, when promoting, stores the hit on the
        /// caches before it.
        func answered(_ hit: CacheQueryResult, by position: Int, key: String) -> CacheQueryResult {
            var hit = hit
            hit.answeredBy = offset + position
            if promotes { CachesManager.promote(hit, to: caches[..<position], key: key) }
            return hit
        }
    }

    /// Stores `hit` on `caches` (those above the one that answered), not waiting.
    private static func promote(_ hit: CacheQueryResult, to caches: ArraySlice<any ImageCacheProtocol>, key: String) {
        for cache in caches {
            cache.store(
                hit.image, data: hit.data, metadata: hit.metadata, forKey: key, cacheType: .all, completion: nil)
        }
    }

    // MARK: Query

    /// Queries per ``queryPolicy``. With ``ImageOptions/queryMemoryData`` a serial query that found an image
    /// without bytes keeps asking the next caches for the bytes.
    ///
    /// Cancel contract (SDWebImage's `SDImageCacheToken`): the completion runs exactly once. Cancelling the
    /// returned ``CacheQueryOperation`` before the answer calls it at once, on the cancelling thread, with
    /// `cancelled`, whatever the levels do with their own cancel; it also cancels the levels' running queries, and
    /// no further level is asked. Returns nil when the answer came before this method returned.
    @discardableResult
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        query(key, options: options, context: context, cacheType: cacheType, claims: nil, completion: completion)
    }

    /// Queries like ``queryImage(forKey:options:context:cacheType:completion:)``, asking each cache with its own
    /// claiming query. What the levels hold for their misses is this manager's until it answers: when the answer
    /// is nil the caller owns it (its ``missEnded(forKey:cacheType:outcome:)`` reaches every cache); when the answer
    /// is a hit (say, memory had the image and a lower level, asked for the bytes, missed), an error or a cancel,
    /// the manager ends each level's miss itself as ``CacheMissOutcome/abandoned`` — nobody here fetches for them.
    @discardableResult
    public func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        let claims = LevelClaims(key: key, cacheType: cacheType)
        return query(key, options: options, context: context, cacheType: cacheType, claims: claims) { result in
            if case .success(nil) = result { claims.handOver() } else { claims.endAll() }
            completion(result)
        }
    }

    private func query(
        _ key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType, claims: LevelClaims?,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        let (policy, promotes) = state.withLock { ($0.queryPolicy, $0.promotesHits) }
        let (caches, offset) = targetsAndOffset(policy)
        guard !caches.isEmpty else {
            completion(.success(nil))
            return nil
        }
        let scope = QueryScope(caches: caches, offset: offset, promotes: promotes)
        let operation = CacheQueryOperation(completion: completion)
        // A cancel answers at once: the misses levels already reported are ended then, and later ones as they come.
        if let claims { operation.onCancel { claims.endAll() } }
        if policy == .concurrent {
            queryConcurrently(
                scope, key: key, options: options, context: context, cacheType: cacheType, claims: claims,
                operation: operation)
        } else {
            querySerially(
                scope, from: 0, found: nil, key: key, options: options, context: context, cacheType: cacheType,
                claims: claims, operation: operation)
        }
        return operation.isFinished ? nil : operation
    }

    /// One level's query: claiming when the caller claims misses.
    private static func ask(
        _ cache: any ImageCacheProtocol, key: String, options: ImageOptions, context: ImageContext,
        cacheType: ImageCacheType, claims: LevelClaims?,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        guard let claims else {
            return cache.queryImage(
                forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
        }
        return cache.queryImageClaimingMiss(forKey: key, options: options, context: context, cacheType: cacheType) {
            result in
            if case .success(nil) = result { claims.add(cache) }
            completion(result)
        }
    }

    /// Asks the caches in priority order (per ``queryPolicy``) on the caller's thread: the first hit wins, a miss
    /// asks the next, and the first cache that can't answer synchronously makes the whole answer
    /// ``SyncCacheQueryResult/needsAsyncQuery`` — which is therefore also the answer with
    /// ``ImageOptions/queryMemoryData`` when the hit has no bytes (the asynchronous query would look further).
    public func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult {
        let (policy, caches, promotes) = state.withLock { ($0.queryPolicy, $0.caches, $0.promotesHits) }
        let range: Range<Int>
        switch policy {
        case .highestOnly: range = caches.startIndex..<min(caches.startIndex + 1, caches.endIndex)
        case .lowestOnly: range = max(caches.startIndex, caches.endIndex - 1)..<caches.endIndex
        case .serial, .concurrent: range = caches.indices
        }
        for index in range {
            switch caches[index].queryImageSync(forKey: key, options: options, context: context, cacheType: cacheType) {
            case .hit(let hit):
                if options.contains(.queryMemoryData), hit.data == nil { return .needsAsyncQuery }
                var hit = hit
                hit.answeredBy = index
                if promotes { Self.promote(hit, to: caches[range.lowerBound..<index], key: key) }
                return .hit(hit)
            case .miss: continue
            case .needsAsyncQuery: return .needsAsyncQuery
            }
        }
        return .miss
    }

    private func querySerially(
        _ scope: QueryScope, from position: Int, found: CacheQueryResult?, key: String, options: ImageOptions,
        context: ImageContext, cacheType: ImageCacheType, claims: LevelClaims?, operation: CacheQueryOperation
    ) {
        // A cancelled query already completed: ask no further level.
        guard !operation.isFinished else { return }
        guard position < scope.caches.count else {
            operation.complete(.success(found))
            return
        }
        let inner = Self.ask(
            scope.caches[position], key: key, options: options, context: context, cacheType: cacheType,
            claims: claims
        ) { result in
            var merged = found
            switch result {
            case .failure(let error) where found == nil:
                if error.isCancellation {
                    operation.complete(.failure(error))
                    return
                }
            case .failure:
                break
            case .success(let hit?):
                if var current = merged {
                    // The bytes (and validators) come from a lower level; `cacheType` and `answeredBy` keep naming
                    // the level that answered with the image.
                    if current.data == nil, let data = hit.data {
                        current.data = data
                        current.metadata = current.metadata ?? hit.metadata
                    }
                    merged = current
                } else {
                    merged = scope.answered(hit, by: position, key: key)
                }
            case .success(nil):
                break
            }
            let needsData = options.contains(.queryMemoryData) && merged?.data == nil
            if let merged, !needsData {
                operation.complete(.success(merged))
                return
            }
            self.querySerially(
                scope, from: position + 1, found: merged, key: key, options: options, context: context,
                cacheType: cacheType, claims: claims, operation: operation)
        }
        if let inner { operation.onCancel { inner.cancel() } }
    }

    private func queryConcurrently(
        _ scope: QueryScope, key: String, options: ImageOptions, context: ImageContext,
        cacheType: ImageCacheType, claims: LevelClaims?, operation: CacheQueryOperation
    ) {
        let results = Locked([CacheQueryResult?](repeating: nil, count: scope.caches.count))
        let countdown = Countdown(scope.caches.count) {
            let all = results.withLock { $0 }
            if let position = all.firstIndex(where: { $0 != nil }), let hit = all[position] {
                operation.complete(.success(scope.answered(hit, by: position, key: key)))
            } else {
                operation.complete(.success(nil))
            }
        }
        for (index, cache) in scope.caches.enumerated() {
            // A cancelled query already completed: start no further level.
            guard !operation.isFinished else { return }
            let inner = Self.ask(
                cache, key: key, options: options, context: context, cacheType: cacheType, claims: claims
            ) {
                if case .success(let hit?) = $0 { results.withLock { $0[index] = hit } }
                countdown.tick()
            }
            if let inner { operation.onCancel { inner.cancel() } }
        }
    }

    // MARK: Store, remove, contains, clear

    /// Stores per ``storePolicy``; reports the first failure after every cache finished.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        let policy = storePolicy
        let caches = targets(policy)
        let firstError = Locked<ImageError?>(nil)
        let finish: @Sendable () -> Void = {
            let error = firstError.withLock { $0 }
            completion?(error.map { .failure($0) } ?? .success(()))
        }
        if policy == .serial {
            storeSerially(
                caches[...], image: image, data: data, metadata: metadata, key: key, cacheType: cacheType,
                firstError: firstError, finish: finish)
            return
        }
        let countdown = Countdown(caches.count, finish)
        for cache in caches {
            cache.store(image, data: data, metadata: metadata, forKey: key, cacheType: cacheType) { result in
                if case .failure(let error) = result { firstError.withLock { $0 = $0 ?? error } }
                countdown.tick()
            }
        }
    }

    private func storeSerially(
        _ caches: ArraySlice<any ImageCacheProtocol>, image: Image?, data: Data?, metadata: CacheEntryMetadata?,
        key: String, cacheType: ImageCacheType, firstError: Locked<ImageError?>, finish: @escaping @Sendable () -> Void
    ) {
        guard let cache = caches.first else { return finish() }
        cache.store(image, data: data, metadata: metadata, forKey: key, cacheType: cacheType) { result in
            if case .failure(let error) = result { firstError.withLock { $0 = $0 ?? error } }
            self.storeSerially(
                caches.dropFirst(), image: image, data: data, metadata: metadata, key: key,
                cacheType: cacheType, firstError: firstError, finish: finish)
        }
    }

    /// Removes per ``removePolicy``.
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        let caches = targets(removePolicy)
        let countdown = Countdown(caches.count) { completion?() }
        for cache in caches { cache.removeImage(forKey: key, cacheType: cacheType) { countdown.tick() } }
    }

    /// Tells every cache (each ignores levels it doesn't have): any of them may hold something for a miss.
    public func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {
        for cache in caches { cache.missEnded(forKey: key, cacheType: cacheType, outcome: outcome) }
    }

    /// Reports the union of the levels that hold `key` (serial stops at the first cache that has it).
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        let policy = containsPolicy
        let caches = targets(policy)
        if policy == .serial {
            containsSerially(caches[...], key: key, cacheType: cacheType, completion: completion)
            return
        }
        let found = Locked(ImageCacheType.none)
        let countdown = Countdown(caches.count) { completion(found.withLock { $0 }) }
        for cache in caches {
            cache.containsImage(forKey: key, cacheType: cacheType) { levels in
                found.withLock { $0.formUnion(levels) }
                countdown.tick()
            }
        }
    }

    private func containsSerially(
        _ caches: ArraySlice<any ImageCacheProtocol>, key: String, cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        guard let cache = caches.first else { return completion(.none) }
        cache.containsImage(forKey: key, cacheType: cacheType) { levels in
            if levels != .none { return completion(levels) }
            self.containsSerially(caches.dropFirst(), key: key, cacheType: cacheType, completion: completion)
        }
    }

    /// Waits for every cache's pending writes (whatever the policies): `completion` runs once each cache's
    /// ``ImageCacheProtocol/waitForPendingWrites(completion:)`` has called back.
    public func waitForPendingWrites(completion: @escaping @Sendable () -> Void) {
        let caches = self.caches
        let countdown = Countdown(caches.count, completion)
        for cache in caches { cache.waitForPendingWrites { countdown.tick() } }
    }

    /// Clears per ``clearPolicy``.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        let caches = targets(clearPolicy)
        let countdown = Countdown(caches.count) { completion?() }
        for cache in caches { cache.clear(cacheType: cacheType) { countdown.tick() } }
    }
}

/// Runs `done` once after `count` ticks (at once for zero).
final class Countdown: Sendable {
    private let remaining: Mutex<Int>
    private let done: @Sendable () -> Void

    init(_ count: Int, _ done: @escaping @Sendable () -> Void) {
        remaining = Mutex(count)
        self.done = done
        if count == 0 { done() }
    }

    func tick() {
        let finished = remaining.withLock { value -> Bool in
            value -= 1
            return value == 0
        }
        if finished { done() }
    }
}

/// The misses the levels of one claiming query reported, held until the query answers: handed over to the caller
/// with a nil answer, ended as ``CacheMissOutcome/abandoned`` otherwise (and a miss reported after that is ended at
/// once). Thread-safe.
final class LevelClaims: Sendable {
    private enum Phase {
        case collecting([any ImageCacheProtocol])
        case handedOver
        case ended
    }

    private let key: String
    private let cacheType: ImageCacheType
    private let phase = Mutex(Phase.collecting([]))

    init(key: String, cacheType: ImageCacheType) {
        self.key = key
        self.cacheType = cacheType
    }

    /// `cache` reported a miss it may hold something for.
    func add(_ cache: any ImageCacheProtocol) {
        let endNow = phase.withLock { phase -> Bool in
            switch phase {
            case .collecting(var caches):
                caches.append(cache)
                phase = .collecting(caches)
                return false
            case .handedOver: return false
            case .ended: return true
            }
        }
        if endNow { cache.missEnded(forKey: key, cacheType: cacheType, outcome: .abandoned) }
    }

    /// The caller owns the misses (the answer was nil).
    func handOver() {
        phase.withLock { phase in
            if case .collecting = phase { phase = .handedOver }
        }
    }

    /// Ends every miss reported, and any reported later.
    func endAll() {
        let caches = phase.withLock { phase -> [any ImageCacheProtocol] in
            guard case .collecting(let caches) = phase else { return [] }
            phase = .ended
            return caches
        }
        for cache in caches { cache.missEnded(forKey: key, cacheType: cacheType, outcome: .abandoned) }
    }
}
