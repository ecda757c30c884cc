import Foundation

extension ImageManager {
    private struct StoreRequest: Sendable {
        let cache: any ImageCacheProtocol
        let image: Image?
        let data: Data?
        let metadata: CacheEntryMetadata?
        let key: String
        let cacheType: ImageCacheType
        /// The disk bytes come from the serializer: encoded after the memory store, off the delivery path.
        var serializes = false
    }

    /// Stores a fetch's result per the plan, then calls `completion` once every store finished.
    ///
    /// Downloads: a derived key (thumbnail or transformer) stores the original bytes as downloaded under the
    /// original key (``LoadPlan/originalStoreCacheType``, default disk) and the result under the derived key,
    /// its disk bytes from the serializer; a plain key stores image and downloaded bytes together. A disk hit
    /// of the key itself is promoted to memory. A result made from a cached original is stored under the derived
    /// key only. Store failures are logged and never fail the load. Runs on the CPU pool (the serializer may
    /// encode).
    func store(
        _ image: Image, transformed: Bool, source: FetchSource, plan: LoadPlan,
        completion: @escaping @Sendable () -> Void
    ) {
        guard let key = plan.key else { return completion() }
        var requests: [StoreRequest] = []
        switch source.role {
        case .download:
            let metadata = source.response.map { CacheEntryMetadata(response: $0, key: plan.originalKey) }
            if plan.isDerived, let originalKey = plan.originalKey {
                if plan.originalStoreCacheType != .none, let data = source.data {
                    requests.append(
                        StoreRequest(
                            cache: plan.originalCache, image: nil, data: data, metadata: metadata, key: originalKey,
                            cacheType: plan.originalStoreCacheType.subtracting(.memory)))
                }
                if plan.storeCacheType != .none {
                    var derivedMetadata = CacheEntryMetadata(originalKey: key, storedAt: Date())
                    derivedMetadata.contentType = image.format.mimeType
                    requests.append(
                        StoreRequest(
                            cache: plan.cache, image: image, data: transformed ? nil : source.data,
                            metadata: derivedMetadata, key: key, cacheType: plan.storeCacheType,
                            serializes: transformed))
                }
            } else if plan.storeCacheType != .none {
                var plainMetadata = metadata
                plainMetadata?.originalKey = key
                requests.append(
                    StoreRequest(
                        cache: plan.cache, image: image, data: source.data, metadata: plainMetadata, key: key,
                        cacheType: plan.storeCacheType))
            }
        case .keyHit:
            if plan.storeCacheType.contains(.memory) && !source.cacheType.contains(.memory) {
                requests.append(
                    StoreRequest(
                        cache: plan.cache, image: image, data: nil, metadata: nil, key: key, cacheType: .memory))
            }
        case .originalHit:
            if plan.storeCacheType != .none {
                requests.append(
                    StoreRequest(
                        cache: plan.cache, image: image, data: transformed ? nil : source.data,
                        metadata: CacheEntryMetadata(originalKey: key, storedAt: Date()), key: key,
                        cacheType: plan.storeCacheType, serializes: transformed))
            }
        }
        // A serialized variant goes to memory now (before the fetch ends, which the download recheck relies on)
        // and is encoded for disk afterwards on the pool, so the encode never delays delivery.
        var immediate: [StoreRequest] = []
        var deferred: [StoreRequest] = []
        for request in requests {
            guard request.serializes, request.cacheType.contains(.disk) else {
                immediate.append(request)
                continue
            }
            if request.cacheType.contains(.memory) {
                let memory = StoreRequest(
                    cache: request.cache, image: request.image, data: nil, metadata: nil, key: request.key,
                    cacheType: .memory)
                immediate.append(memory)
            }
            deferred.append(request)
        }
        let countdown = Countdown(immediate.count + deferred.count, completion)
        let perform: @Sendable (StoreRequest, Data?, ImageCacheType) -> Void = { request, data, cacheType in
            request.cache.store(
                request.image, data: data, metadata: request.metadata, forKey: request.key, cacheType: cacheType
            ) { result in
                if case .failure(let error) = result {
                    self.log("cache store failed for key \(request.key): \(error)")
                }
                countdown.tick()
            }
        }
        for request in immediate { perform(request, request.data, request.cacheType) }
        guard !deferred.isEmpty else { return }
        let encodeLater = deferred
        workPool.submit {
            for request in encodeLater {
                let data = plan.serializer.cacheData(for: image, originalData: source.data, imageURL: plan.url)
                if data == nil { self.log("cache serializer produced no bytes for key \(request.key)") }
                perform(request, data, .disk)
            }
        }
    }
}
