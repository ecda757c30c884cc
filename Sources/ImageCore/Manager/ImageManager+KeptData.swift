import Foundation

/// Where a ``ImageOptions/refreshStale`` data load keeps its bytes: the URL's original key (the key an image load of
/// the URL stores its downloaded bytes under), in the cache and levels that hold originals for the load's context.
struct DataPlace: Sendable {
    let key: String
    let cache: any ImageCacheProtocol
    let queryLevels: ImageCacheType
    let storeLevels: ImageCacheType

    init?(_ plan: LoadPlan) {
        guard let key = plan.originalKey else { return nil }
        self.key = key
        if plan.isDerived {
            cache = plan.originalCache
            queryLevels = plan.originalQueryCacheType
            storeLevels = plan.originalStoreCacheType
        } else {
            cache = plan.cache
            queryLevels = plan.queryCacheType
            storeLevels = plan.storeCacheType
        }
    }

    /// True when `plan`'s load may be answered from this place: it asks some level, and not the loader only. The
    /// query and the look at memory before a transfer both follow it.
    func answers(_ plan: LoadPlan) -> Bool {
        queryLevels != .none && !plan.options.contains(.fromLoaderOnly)
    }
}

/// Cached bytes a `.refreshStale` data load found: its answer while fresh, or after a 304.
struct KeptEntry: Sendable {
    let data: Data
    let metadata: CacheEntryMetadata?
    let cacheType: ImageCacheType
    let answeredBy: Int?

    init(_ hit: CacheQueryResult, data: Data) {
        self.init(data: data, metadata: hit.metadata, cacheType: hit.cacheType, answeredBy: hit.answeredBy)
    }

    private init(data: Data, metadata: CacheEntryMetadata?, cacheType: ImageCacheType, answeredBy: Int?) {
        self.data = data
        self.metadata = metadata
        self.cacheType = cacheType
        self.answeredBy = answeredBy
    }

    /// The entry a 304 (`response`, when the loader kept it) leaves: its lifetime renewed
    /// (``Revalidation/renewed(_:response:now:)``; nil when nothing states one) and the loader's updated blob.
    func revalidated(response: ResponseMetadata?) -> (entry: KeptEntry, renewed: Bool) {
        let renewed = Revalidation.renewed(metadata, response: response, now: Date())
        let metadata = renewed ?? metadata?.keepingBlob(of: response)
        let entry = KeptEntry(data: data, metadata: metadata, cacheType: cacheType, answeredBy: answeredBy)
        return (entry, renewed != nil)
    }

    /// The entry as a data load's result: the stored response facts (content type, validators, lifetime, the
    /// loader's blob). `joined`: the load shared another load's revalidation.
    func result(url: URL, isNotModified: Bool, joined: Bool = false) -> ImageDataResult {
        var response = ResponseMetadata(
            url: url, statusCode: 200, contentType: metadata?.contentType, etag: metadata?.etag,
            lastModified: metadata?.lastModified, maxAge: metadata?.maxAge)
        if let extended = metadata?.extendedData { response.extendedData = extended }
        var result = ImageDataResult(
            data: data, response: response, url: url, cacheType: cacheType, isNotModified: isNotModified,
            answeredBy: answeredBy)
        result.joinedTransfer = joined
        return result
    }

    /// The fresh bytes the memory level of `place` holds, asked on the caller's thread; nil when it holds none.
    static func freshInMemory(_ place: DataPlace, context: ImageContext) -> KeptEntry? {
        guard place.queryLevels.contains(.memory),
            case .hit(let hit) = place.cache.queryImageSync(
                forKey: place.key, options: .queryMemoryData, context: context, cacheType: .memory),
            let data = hit.data, Revalidation.isFresh(hit.metadata, now: Date())
        else { return nil }
        return KeptEntry(hit, data: data)
    }
}

/// The cache miss a `.refreshStale` data load holds (a fleet lease, ``MissClaim``), ended once by whichever way
/// the load ends: after its store finished (so a waiting replica finds the entry), or with the outcome its failure
/// says. A data load's claim is its own, not its job's: the job stores nothing for it.
final class KeptClaim: Sendable {
    private let claim = Locked<MissClaim?>(nil)

    func hold(_ claim: MissClaim) { self.claim.withLock { $0 = claim } }

    /// Ends the claim, if it holds one still.
    func end(_ outcome: CacheMissOutcome) {
        claim.withLock { held in
            defer { held = nil }
            return held
        }?.end(outcome)
    }

    /// Ends the claim as `error` says: `notStored` for a failure every try would meet (``ImageLoaderPolicy``),
    /// else `abandoned` (another process may succeed).
    func end(failure error: ImageError) {
        let permanent = !error.isCancellation && ImageLoaderPolicy.isPermanentFailure(error)
        end(permanent ? .notStored : .abandoned)
    }
}

extension ImageManager {
    /// Runs a `.refreshStale` data load: fresh cached bytes answer it; stale ones are revalidated with the loader
    /// first (a 304 answers with them and renews them); a miss downloads. Downloaded bytes are stored in `place`.
    ///
    /// The query claims a miss (a fleet's lease, ``KeptClaim``), which ends once the bytes are stored or the load
    /// failed. The loads sharing one transfer store its bytes once (``FetchJob/keptStore(for:)``), and the loads
    /// whose 304 renewed one entry renew it once (``KeptRenewals``).
    func loadKeptData(_ plan: LoadPlan, completed: @escaping ImageDataCompletionHandler) -> ImageLoadOperation {
        let place = DataPlace(plan)
        let kept = Locked<KeptEntry?>(nil)
        let claim = KeptClaim()
        let url = plan.url
        // The operation, for its completion to read whether it joined another load's revalidation; let go there (the
        // completion runs once), so the two don't keep each other.
        let started = Locked<ImageLoadOperation?>(nil)
        let operation = ImageLoadOperation(
            url: url, manager: self, callbackQueue: plan.callbackQueue, progress: nil
        ) { result in
            let joined = started.withLock { operation in
                defer { operation = nil }
                return operation?.joinedTransfer ?? false
            }
            guard case .failure(let error) = result else { return }
            // Only a loader's answer reaches here as `cacheNotModified`: a load that may not download never asks
            // (``downloadRefusal(_:)`` is checked first), so the kept bytes are current and their lifetime renewed.
            guard error.code == .cacheNotModified, let entry = kept.value, let place else {
                claim.end(failure: error)
                return completed(.failure(error))
            }
            let (current, renewed) = entry.revalidated(response: error.response)
            if renewed {
                // The loads that revalidated this very entry (one transfer's 304) renew it once.
                let write = { (done: @escaping @Sendable (Bool) -> Void) in
                    Self.store(current.data, metadata: current.metadata, in: place, then: done)
                }
                if let target = KeptTarget(place) {
                    self.keptRenewals.store(for: target, renewing: entry.metadata).run(then: nil, write)
                } else {
                    write { _ in }
                }
            }
            completed(.success(current.result(url: url, isNotModified: true, joined: joined)))
        }
        started.withLock { $0 = operation }
        // Registered for cancelAll before the work starts, as an image load is.
        register(operation)
        if let timeout = plan.context.loadTimeout { Self.expire(operation, after: timeout) }
        guard let place, place.answers(plan) else {
            downloadKeeping(operation, plan, place: place, cached: nil, claim: claim, completed: completed)
            return operation
        }
        let query = place.cache.queryImageClaimingMiss(
            forKey: place.key, options: plan.options.union(.queryMemoryData), context: plan.context,
            cacheType: place.queryLevels
        ) { result in
            operation.detachQuery()
            switch result {
            case .failure(let error) where error.isCancellation:
                operation.finish(.failure(error))
            case .success(let hit?) where hit.data != nil:
                let entry = KeptEntry(hit, data: hit.data ?? Data())
                // Fresh bytes are the answer; so are stale ones when the load may not ask the loader.
                if Revalidation.isFresh(hit.metadata, now: Date()) || self.downloadRefusal(plan) != nil {
                    return Self.answer(entry.result(url: url, isNotModified: false), operation, completed)
                }
                kept.withLock { $0 = entry }
                self.downloadKeeping(operation, plan, place: place, cached: hit, claim: claim, completed: completed)
            case .success(.some):
                // An image without bytes: a miss for a data load, but a hit for the cache, which claimed nothing.
                self.downloadKeeping(operation, plan, place: place, cached: nil, claim: claim, completed: completed)
            case .success(nil), .failure:
                claim.hold(MissClaim(cache: place.cache, key: place.key, levels: place.queryLevels))
                // A load that ended meanwhile (a cancel between the answer and here) ends the claim it never saw.
                if operation.isFinished { claim.end(.abandoned) }
                self.downloadKeeping(operation, plan, place: place, cached: nil, claim: claim, completed: completed)
            }
        }
        operation.attach(query: query)
        return operation
    }

    /// Downloads for a `.refreshStale` data load (revalidating `cached` when given) and stores what it is served;
    /// the claim ends when that store finished, or at once when nothing is stored.
    private func downloadKeeping(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, place: DataPlace?, cached: CacheQueryResult?,
        claim: KeptClaim, completed: @escaping ImageDataCompletionHandler
    ) {
        // A load that missed while an identical one was storing its bytes takes them from memory rather than
        // starting a transfer of its own, once that load's job ended.
        var recheck: MemoryRecheck?
        if let place, place.answers(plan) {
            recheck = {
                guard let entry = KeptEntry.freshInMemory(place, context: plan.context) else { return nil }
                return { @Sendable in
                    claim.end(.abandoned)
                    Self.answer(entry.result(url: plan.url, isNotModified: false), operation, completed)
                }
            }
        }
        let keep: @Sendable (ImageDataResult, FetchJob) -> Void = { loaded, transfer in
            if let place, place.storeLevels != .none, plan.mayStore(loaded.response) {
                // Every load sharing the transfer is served the same bytes: one of them stores them, and each ends its
                // claim once that store finished.
                let ended: @Sendable (Bool) -> Void = { claim.end($0 ? .stored : .abandoned) }
                let write = { (done: @escaping @Sendable (Bool) -> Void) in
                    Self.store(
                        loaded.data, metadata: CacheEntryMetadata(response: loaded.response, key: place.key),
                        in: place, then: done)
                }
                if let target = KeptTarget(place) {
                    transfer.keptStore(for: target).run(then: ended, write)
                } else {
                    write(ended)
                }
            } else {
                claim.end(.notStored)
            }
        }
        download(
            operation, plan, cached: cached, keptRecheck: recheck,
            deliverData: DataDelivery(keep: keep) { completed(.success($0)) })
    }

    /// Hands a data load its answer from the cache, on its callback queue (unless it already ended).
    private static func answer(
        _ result: ImageDataResult, _ operation: ImageLoadOperation, _ completed: @escaping ImageDataCompletionHandler
    ) {
        guard operation.decideDataResult() else { return }
        let queue = operation.callbackQueue
        if case .current = queue.kind {
            completed(.success(result))
        } else {
            queue.execute { completed(.success(result)) }
        }
    }

    /// Stores kept bytes with `metadata` in `place`'s store levels; `then` learns, once the store finished, whether it
    /// stored them (a failed store leaves the key to whoever tries next: `abandoned`, not `stored`).
    private static func store(
        _ data: Data, metadata: CacheEntryMetadata?, in place: DataPlace, then: (@Sendable (Bool) -> Void)?
    ) {
        guard place.storeLevels != .none else {
            then?(false)
            return
        }
        let completion: (@Sendable (Result<Void, ImageError>) -> Void)?
        if let then {
            completion = { result in
                if case .success = result { then(true) } else { then(false) }
            }
        } else {
            completion = nil
        }
        place.cache.store(
            nil, data: data, metadata: metadata, forKey: place.key, cacheType: place.storeLevels,
            completion: completion)
    }
}
