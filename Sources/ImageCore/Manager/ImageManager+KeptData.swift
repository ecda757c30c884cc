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
}

/// Cached bytes a `.refreshStale` data load found: its answer while fresh, or after a 304.
struct KeptEntry: Sendable {
    let data: Data
    let metadata: CacheEntryMetadata?
    let cacheType: ImageCacheType

    /// The entry as a data load's result: the stored response facts (content type, validators, lifetime).
    func result(url: URL, isNotModified: Bool) -> ImageDataResult {
        let response = ResponseMetadata(
            url: url, statusCode: 200, contentType: metadata?.contentType, etag: metadata?.etag,
            lastModified: metadata?.lastModified, maxAge: metadata?.maxAge)
        return ImageDataResult(
            data: data, response: response, url: url, cacheType: cacheType, isNotModified: isNotModified)
    }
}

extension ImageManager {
    /// Runs a `.refreshStale` data load: fresh cached bytes answer it; stale ones are revalidated with the loader
    /// first (a 304 answers with them and renews them); a miss downloads. Downloaded bytes are stored in `place`.
    ///
    /// Every data load stores what it was served and renews what it revalidated, so N loads sharing one transfer
    /// write the same entry N times (the protocol stores are idempotent; a job-level store is not built yet).
    func loadKeptData(_ plan: LoadPlan, completed: @escaping ImageDataCompletionHandler) -> ImageLoadOperation {
        let place = DataPlace(plan)
        let kept = Locked<KeptEntry?>(nil)
        let url = plan.url
        let operation = ImageLoadOperation(
            url: url, manager: self, callbackQueue: plan.callbackQueue, progress: nil
        ) { result in
            guard case .failure(let error) = result else { return }
            // Only a loader's answer reaches here as `cacheNotModified`: a load that may not download never asks
            // (``downloadRefusal(_:)`` is checked first), so the kept bytes are current and their lifetime renewed.
            guard error.code == .cacheNotModified, let entry = kept.value, let place else {
                return completed(.failure(error))
            }
            Self.renew(entry, in: place, response: error.response)
            completed(.success(entry.result(url: url, isNotModified: true)))
        }
        if let timeout = plan.context.loadTimeout { Self.expire(operation, after: timeout) }
        guard let place, place.queryLevels != .none, !plan.options.contains(.fromLoaderOnly) else {
            downloadKeeping(operation, plan, place: place, cached: nil, completed: completed)
            return operation
        }
        let query = place.cache.queryImage(
            forKey: place.key, options: plan.options.union(.queryMemoryData), context: plan.context,
            cacheType: place.queryLevels
        ) { result in
            operation.detachQuery()
            switch result {
            case .failure(let error) where error.isCancellation:
                operation.finish(.failure(error))
            case .success(let hit?):
                guard let data = hit.data else {
                    return self.downloadKeeping(operation, plan, place: place, cached: nil, completed: completed)
                }
                let entry = KeptEntry(data: data, metadata: hit.metadata, cacheType: hit.cacheType)
                // Fresh bytes are the answer; so are stale ones when the load may not ask the loader.
                if Revalidation.isFresh(hit.metadata, now: Date()) || self.downloadRefusal(plan) != nil {
                    return Self.answer(entry.result(url: url, isNotModified: false), operation, completed)
                }
                kept.withLock { $0 = entry }
                self.downloadKeeping(operation, plan, place: place, cached: hit, completed: completed)
            case .success(nil), .failure:
                self.downloadKeeping(operation, plan, place: place, cached: nil, completed: completed)
            }
        }
        operation.attach(query: query)
        return operation
    }

    /// Downloads for a `.refreshStale` data load (revalidating `cached` when given) and stores what it is served.
    private func downloadKeeping(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, place: DataPlace?, cached: CacheQueryResult?,
        completed: @escaping ImageDataCompletionHandler
    ) {
        download(operation, plan, cached: cached) { loaded in
            if let place { Self.keep(loaded, in: place, plan: plan) }
            completed(.success(loaded))
        }
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

    /// Stores bytes a data load was served, unless the response forbids it (`no-store`; `private` unless the manager
    /// caches private responses) or the load stores nothing.
    private static func keep(_ loaded: ImageDataResult, in place: DataPlace, plan: LoadPlan) {
        guard place.storeLevels != .none, plan.mayStore(loaded.response) else { return }
        place.cache.store(
            nil, data: loaded.data, metadata: CacheEntryMetadata(response: loaded.response, key: place.key),
            forKey: place.key, cacheType: place.storeLevels, completion: nil)
    }

    /// Stores revalidated bytes again with their renewed metadata (``Revalidation/renewed(_:response:now:)``).
    private static func renew(_ entry: KeptEntry, in place: DataPlace, response: ResponseMetadata?) {
        guard place.storeLevels != .none,
            let metadata = Revalidation.renewed(entry.metadata, response: response, now: Date())
        else { return }
        place.cache.store(
            nil, data: entry.data, metadata: metadata, forKey: place.key, cacheType: place.storeLevels,
            completion: nil)
    }
}
