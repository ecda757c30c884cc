import Foundation

extension ImageManager {
    /// Disk encodes that may wait in the work pool's background lane; later ones are dropped.
    static let maxPendingDiskEncodes = 64

    private struct StoreRequest: Sendable {
        let cache: any ImageCacheProtocol
        let image: Image?
        let data: Data?
        var metadata: CacheEntryMetadata?
        let key: String
        let cacheType: ImageCacheType
        /// The disk bytes come from the serializer: encoded after the memory store, off the delivery path.
        var serializes = false
        /// Bytes that decode to exactly `image`, handed to the serializer (the default one stores them as they are).
        var exactData: Data? = nil
    }

    /// Stores a fetch's result per the plan, then calls `completion` once every store finished.
    ///
    /// What goes where follows from the source and the product (the key table in ARCHITECTURE.md):
    /// - a download stores the original bytes as downloaded under the original key (a derived load: its
    ///   ``LoadPlan/originalStoreCacheType``, default disk; a plain load: its disk levels) and the canonical
    ///   product under the load's key — in memory as an image, on disk as the serializer's bytes for a derived key;
    /// - a key's own entry read as bytes (from disk, or a memory level's bytes alone) is promoted to memory as its
    ///   image;
    /// - a product made from the cached original is stored under the derived key only;
    /// - a variant (``FetchProduct/canonical`` nil) is never stored under the key;
    /// - nothing is stored for a `Cache-Control: no-store` response, nor for `private` unless
    ///   ``cachesPrivateResponses``.
    ///
    /// Store failures are logged and never fail the load. Runs on the CPU pool (the serializer may encode).
    /// `completion` gets the keys whose bytes were handed to disk levels (what ``CacheMissOutcome/stored`` means).
    func store(
        _ product: FetchProduct, source: FetchSource, plan: LoadPlan,
        completion: @escaping @Sendable (Set<String>) -> Void
    ) {
        guard let key = plan.key else { return completion([]) }
        if product.keepsNothing {
            counters.withLock { $0.incompleteImagesNotStored += 1 }
            return completion([])
        }
        if let response = source.response, !plan.mayStore(response) {
            counters.withLock { $0.responsesNotStored += 1 }
            return completion([])
        }
        var requests: [StoreRequest] = []
        // A derived entry carries its source response's validators and lifetime: a revalidation of the derived key
        // asks the origin about the source it was made from, a 304 keeps the entry, and `.refreshStale` serves it while
        // the source is fresh. (Its content type is the serializer's format, set once the bytes are known.)
        let response = source.response
        let derivedMetadata = { (image: Image) -> CacheEntryMetadata in
            let now = Date()
            var metadata = CacheEntryMetadata(
                originalKey: key, etag: response?.etag, lastModified: response?.lastModified, maxAge: response?.maxAge,
                expiresAt: response?.maxAge.map { now.addingTimeInterval(TimeInterval($0)) }, storedAt: now)
            metadata.contentType = image.format.mimeType
            return metadata
        }
        switch source.origin {
        case .download:
            let metadata = source.response.map { CacheEntryMetadata(response: $0, key: plan.originalKey) }
            if plan.isDerived, let originalKey = plan.originalKey {
                if plan.originalStoreCacheType != .none, let data = source.originalData {
                    requests.append(
                        StoreRequest(
                            cache: plan.originalCache, image: nil, data: data, metadata: metadata, key: originalKey,
                            cacheType: plan.originalStoreCacheType.subtracting(.memory)))
                }
                if plan.storeCacheType != .none, let canonical = product.canonical {
                    requests.append(
                        StoreRequest(
                            cache: plan.cache, image: canonical, data: nil, metadata: derivedMetadata(canonical),
                            key: key, cacheType: plan.storeCacheType, serializes: true, exactData: product.data))
                }
            } else if plan.storeCacheType != .none {
                // The bytes are the original whatever the product; the image only when it is what the key means.
                let levels = product.canonical == nil ? plan.storeCacheType.subtracting(.memory) : plan.storeCacheType
                if levels != .none {
                    var plainMetadata = metadata
                    plainMetadata?.originalKey = key
                    requests.append(
                        StoreRequest(
                            cache: plan.cache, image: product.canonical, data: source.originalData,
                            metadata: plainMetadata, key: key, cacheType: levels))
                }
            }
        case .keyEntry(_, let levels):
            let inMemory = levels.contains(.memory) && source.memoryHoldsImage
            if let canonical = product.canonical, plan.storeCacheType.contains(.memory), !inMemory {
                requests.append(
                    StoreRequest(
                        cache: plan.cache, image: canonical, data: nil, metadata: nil, key: key, cacheType: .memory))
            }
        case .originalEntry:
            if plan.storeCacheType != .none, let canonical = product.canonical {
                requests.append(
                    StoreRequest(
                        cache: plan.cache, image: canonical, data: nil, metadata: derivedMetadata(canonical), key: key,
                        cacheType: plan.storeCacheType, serializes: true, exactData: product.data))
            }
        }
        perform(requests, plan: plan, completion: completion)
    }

    /// Runs the stores. A serialized variant goes to memory now (before the fetch ends, which the download recheck
    /// relies on) and is encoded for disk afterwards on the pool, so the encode never delays delivery.
    private func perform(
        _ requests: [StoreRequest], plan: LoadPlan, completion: @escaping @Sendable (Set<String>) -> Void
    ) {
        var immediate: [StoreRequest] = []
        var deferred: [StoreRequest] = []
        for request in requests {
            guard request.serializes, request.cacheType.contains(.disk) else {
                immediate.append(request)
                continue
            }
            if request.cacheType.contains(.memory) {
                immediate.append(
                    StoreRequest(
                        cache: request.cache, image: request.image, data: nil, metadata: nil, key: request.key,
                        cacheType: .memory))
            }
            deferred.append(request)
        }
        guard !immediate.isEmpty || !deferred.isEmpty else { return completion([]) }
        let storedKeys = Locked<Set<String>>([])
        let countdown = Countdown(immediate.count + deferred.count) { completion(storedKeys.value) }
        let store: @Sendable (StoreRequest, Data?, ImageCacheType) -> Void = { request, data, cacheType in
            if data != nil, cacheType.contains(.disk) { storedKeys.withLock { _ = $0.insert(request.key) } }
            request.cache.store(
                request.image, data: data, metadata: request.metadata, forKey: request.key, cacheType: cacheType
            ) { result in
                if case .failure(let error) = result {
                    self.log("cache store failed for key \(request.key): \(error)")
                }
                countdown.tick()
            }
        }
        for request in immediate { store(request, request.data, request.cacheType) }
        guard !deferred.isEmpty else { return }
        // Encodes wait in the pool's background lane, behind every decode a caller waits for. When they can't keep
        // up, the disk copy of a derived image is dropped (counted) rather than holding images without bound.
        if workPool.pendingBackgroundCount >= Self.maxPendingDiskEncodes {
            counters.withLock { $0.diskEncodesDropped += deferred.count }
            for _ in deferred { countdown.tick() }
            return
        }
        let encodeLater = deferred
        workPool.submit(priority: .background) {
            for request in encodeLater {
                guard let image = request.image else {
                    countdown.tick()
                    continue
                }
                // A derived key's bytes are the serializer's encoding of the product: the original's bytes only when
                // they decode to exactly the product (the first frame of a still), else they mean something else.
                let data = plan.serializer.cacheData(for: image, originalData: request.exactData, imageURL: plan.url)
                if data == nil { self.log("cache serializer produced no bytes for key \(request.key)") }
                var described = request
                if let data, let format = ImageFormat.detect(data) {
                    described.metadata?.contentType = format.mimeType
                }
                store(described, data, .disk)
            }
        }
    }
}
