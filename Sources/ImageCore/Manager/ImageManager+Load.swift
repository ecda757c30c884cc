import Foundation

extension ImageManager {
    /// Loads the image at `url` through the main line and calls `completed` with the result.
    ///
    /// Steps: reject an empty URL (`invalidURL`) or a URL on the failed-URL list (`blockedURL`, unless
    /// ``ImageOptions/retryFailed``); merge the manager's transformer / filter / serializer into the context unless
    /// it names its own, then run the ``optionsProcessor``; query the cache (memory, then disk), or — for a
    /// thumbnail or transformed key that misses — the untransformed original; download when allowed; decode,
    /// transform, store, deliver.
    ///
    /// - Parameters:
    ///   - url: the image's URL; nil fails with `invalidURL`.
    ///   - options: the load's flags (``ImageOptions``).
    ///   - context: per-load keys and strategies (``ImageContext``), layered over the manager's defaults; a
    ///     ``ImageContext/loadTimeout`` bounds the whole load.
    ///   - progress: bytes received / expected, on the callback queue.
    ///   - completed: zero or more non-final deliveries (progressive previews; the cached image of a
    ///     ``ImageOptions/refreshCached`` load), then exactly one final result, and nothing after it; calls never
    ///     overlap. A cancelled load completes with `cancelled`. Memory hits complete before this method returns
    ///     (with the default ``CallbackQueue/current``).
    /// - Returns: the handle that cancels this load only.
    @discardableResult
    public func loadImage(
        with url: URL?, options: ImageOptions = [], context: ImageContext? = nil,
        progress: ImageProgressHandler? = nil, completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        // Unwrapped in the arguments, not into bindings: a binding is a copy of its own (a retain and a release).
        guard url != nil else {
            return failedOperation(.invalidURL("nil URL"), context ?? ImageContext(), completed)
        }
        guard context != nil else {
            return load(
                url.unsafelyUnwrapped, options: options, context: ImageContext(), progress: progress,
                completed: completed)
        }
        return load(
            url.unsafelyUnwrapped, options: options, context: context.unsafelyUnwrapped, progress: progress,
            completed: completed)
    }

    /// ``loadImage(with:options:context:progress:completed:)`` once the URL and the context are unwrapped.
    ///
    /// A call of its own (never inlined): both arrive borrowed, so no step of the load copies them, while the
    /// values bound by unwrapping them inside one function were copied, a retain and a release each.
    @inline(never)
    private func load(
        _ url: URL, options: ImageOptions, context: ImageContext, progress: ImageProgressHandler?,
        completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        prepareLoad(
            url, options: options, context: context, failed: { error in failedOperation(error, context, completed) }
        ) { url, context, lookup in
            var hit: ImageLoadOperation?
            let memory = queryMemory(url, &lookup, context: context) { result in
                hit = ImageLoadOperation.completed(
                    url: url, result: result, callbackQueue: context.callbackQueue ?? .current, completion: completed)
            }
            guard let memory, hit == nil else { return hit ?? failedOperation(.cancelled(), context, completed) }
            return start(url, lookup, context: context, after: memory, progress: progress, completed: completed)
        }
    }

    /// Checks the URL (empty or relative: `invalidURL`; on the failed-URL list: `blockedURL` unless
    /// ``ImageOptions/retryFailed``), layers the manager's defaults under the context, runs the options processor
    /// and resolves the keys, then hands the URL, the effective context and the lookup to `prepared`. Both forms of
    /// `loadImage` start here, so each runs the options processor once.
    ///
    /// Inlined with its closures, so nothing it resolves is copied into a value of its own on the way.
    @inline(__always)
    func prepareLoad<R>(
        _ url: URL, options: ImageOptions, context: ImageContext, wantsData: Bool = false,
        failed: (ImageError) -> R, prepared: (URL, ImageContext, inout LoadLookup) -> R
    ) -> R {
        let absoluteString = url.absoluteString
        // The scheme's end, found once: the key builder's extension scan starts after it.
        let schemeEnd = URLScan.plainSchemeEnd(url, absoluteString: absoluteString)
        guard !absoluteString.isEmpty, schemeEnd != nil || url.scheme != nil else {
            return failed(.invalidURL("empty or relative URL"))
        }
        // A data load is blocked only by a verdict on the transfer: one on the image its bytes make is not its own.
        if !options.contains(.retryFailed) && (wantsData ? isFailedTransfer(url) : isFailedURL(url)) {
            return failed(ImageError(.blockedURL, stage: .request, message: absoluteString))
        }
        // Handed on in place (`inout`): a value passed by copy was copied field by field, a reference count each.
        @inline(__always)
        func resolve(_ options: ImageOptions, _ context: ImageContext, _ absoluteString: consuming String) -> R {
            var lookup = LoadLookup(
                url: url, absoluteString: absoluteString, schemeEnd: schemeEnd, options: options, context: context,
                manager: self)
            return prepared(url, context, &lookup)
        }
        guard let settings = loadSettingsIfAny else {
            // No manager defaults and no options processor (most managers): the caller's context is the effective
            // one, borrowed as it is (a copy into a variable would retain its storage, and release it after).
            return resolve(options, context, absoluteString)
        }
        var effectiveOptions = options
        var effectiveContext = context
        effectiveContext.layer(settings.contextDefaults)
        if settings.hasOptionsProcessor, let processor = settings.optionsProcessor {
            let processed = processor.processedResult(for: url, options: effectiveOptions, context: effectiveContext)
            effectiveOptions = processed.options
            effectiveContext = processed.context
        }
        return resolve(effectiveOptions, effectiveContext, absoluteString)
    }

    /// Runs a prepared load that the memory fast path did not end: builds its plan and operation, then asks the
    /// cache levels (or, after a definitive memory miss, goes to the original or the download).
    func start(
        _ url: URL, _ lookup: LoadLookup, context: ImageContext, after memory: MemoryAnswer,
        progress: ImageProgressHandler?, completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        let plan = LoadPlan(url: url, lookup: lookup, context: context, manager: self)
        let operation = ImageLoadOperation(
            url: url, manager: self, callbackQueue: plan.callbackQueue, progress: progress, completion: completed)
        // Registered for cancelAll before any work starts: a load whose request already reached the loader is one a
        // cancelAll must reach (its finish unregisters it, even during the start).
        register(operation)
        if let timeout = context.loadTimeout { Self.expire(operation, after: timeout) }
        if case .miss = memory {
            if let key = plan.key {
                operation.addClaim(MissClaim(cache: plan.cache, key: key, levels: plan.queryCacheType))
            }
            queryOriginalOrDownload(operation, plan)
        } else {
            queryKey(operation, plan, levels: plan.queryCacheType)
        }
        return operation
    }

    /// Ends `operation` with `timedOut` once `seconds` passed, unless it finished (``ImageContext/loadTimeout``), on
    /// ``DeadlineTimer``'s thread (a dispatch timer fired 6 s late while the process kept dispatch's threads busy).
    static func expire(_ operation: ImageLoadOperation, after seconds: Double) {
        guard !seconds.isNaN else { return }
        operation.attach(deadline: DeadlineTimer.shared.schedule(operation, after: seconds))
    }

    /// Loads the image at the URL string; a string that is not a URL fails with `invalidURL`.
    @discardableResult
    public func loadImage(
        withString string: String?, options: ImageOptions = [], context: ImageContext? = nil,
        progress: ImageProgressHandler? = nil, completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        loadImage(
            with: string.flatMap { URL(string: $0) }, options: options, context: context, progress: progress,
            completed: completed)
    }

    func failedOperation(
        _ error: ImageError, _ context: ImageContext, _ completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        let operation = ImageLoadOperation(
            url: nil, manager: nil, callbackQueue: context.callbackQueue ?? .current, progress: nil,
            completion: completed)
        operation.finish(.failure(error))
        return operation
    }

    func register(_ operation: ImageLoadOperation) {
        running.withLock { $0[ObjectIdentifier(operation)] = operation }
    }

    func unregister(_ operation: ImageLoadOperation) {
        running.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(operation)) }
    }

    // MARK: Cache query

    /// What the synchronous memory query told a load it did not end.
    enum MemoryAnswer {
        /// Every level of the load's query missed: go straight to the original or the download.
        case miss
        /// Ask the levels the usual way (a disk level, an option that needs more than the image, a cached image
        /// this load can't use, or a load that may not read the cache).
        case query
    }

    /// The memory fast path: asks the cache on this thread when the load's options let a memory hit end the load
    /// (no revalidation, no bytes wanted, cache not skipped). A deliverable hit goes to `hit` and returns nil; it
    /// takes the lookup's key for its result (the lookup is not used after a hit).
    @inline(__always)
    func queryMemory(
        _ url: URL, _ lookup: inout LoadLookup, context: ImageContext, hit: (consuming ImageResult) -> Void
    ) -> MemoryAnswer? {
        guard lookup.hasKey, lookup.queryCacheType.contains(.memory),
            lookup.options.isDisjoint(with: ImageOptions.revalidating.union([.fromLoaderOnly, .queryMemoryData]))
        else { return .query }
        switch lookup.queryImageSync(context: context, manager: self) {
        case .hit(var found):
            // Taken out of the result, not copied, and the result handed on consumed: from the cache's lookup to
            // the completion, a hit's image, URL and key are retained once each (every copy on the way was a
            // retain and a release).
            guard let cached = found.image.take() else { return .query }
            if lookup.deliversAsCached(cached) {
                hit(
                    ImageResult(
                        image: consume cached, data: found.data, cacheType: found.cacheType, url: url,
                        cacheKey: lookup.takeKey()))
                return nil
            }
            guard let image = lookup.deliverable(fromCached: cached) else { return .query }
            hit(
                ImageResult(
                    image: image, data: image === cached ? found.data : nil, cacheType: found.cacheType, url: url,
                    cacheKey: lookup.takeKey()))
            return nil
        case .miss: return .miss
        case .needsAsyncQuery: return .query
        }
    }

    /// Queries the load's own key in `levels`.
    private func queryKey(_ operation: ImageLoadOperation, _ plan: LoadPlan, levels: ImageCacheType) {
        guard let key = plan.key, !plan.options.contains(.fromLoaderOnly), levels != .none else {
            return queryOriginalOrDownload(operation, plan)
        }
        // Revalidation needs the entry's validators (and `.refreshStale` its lifetime), which live with the bytes:
        // read them even on a memory hit.
        let queryOptions =
            plan.options.isDisjoint(with: .revalidating) ? plan.options : plan.options.union(.queryMemoryData)
        // A claiming query: what a miss holds (a fleet lease) is this load's to end (``MissClaim``); on a hit the cache
        // ends it itself, so a revalidation that read the bytes below a memory hit leaves no lease behind.
        let query = plan.cache.queryImageClaimingMiss(
            forKey: key, options: queryOptions, context: plan.context, cacheType: levels
        ) { result in
            operation.detachQuery()
            switch result {
            case .success(let hit?) where hit.image != nil || hit.data != nil:
                self.handleHit(hit, key: key, levels: levels, operation, plan)
            case .failure(let error) where error.isCancellation:
                operation.finish(.failure(error))
            case .success, .failure:
                operation.addClaim(MissClaim(cache: plan.cache, key: key, levels: levels))
                self.queryOriginalOrDownload(operation, plan)
            }
        }
        operation.attach(query: query)
    }

    private func handleHit(
        _ hit: CacheQueryResult, key: String, levels: ImageCacheType, _ operation: ImageLoadOperation, _ plan: LoadPlan
    ) {
        let revalidation = Revalidation(options: plan.options, hit: hit)
        if let cached = hit.image {
            if let image = plan.deliverable(fromCached: cached) {
                let result = ImageResult(
                    image: image, data: image === cached ? hit.data : nil, cacheType: hit.cacheType, url: plan.url,
                    cacheKey: key)
                guard revalidation != .none else { return operation.finish(.success(result)) }
                keepForRevalidation(result, hit: hit, key: key, revalidation, operation, plan)
                return download(operation, plan, cached: hit)
            }
            // The level that holds the image can't honour this load (see `deliverable`): use the bytes if the hit
            // brought them, else ask the levels below it.
            if hit.data == nil {
                return queryKey(operation, plan, levels: levels.subtracting(hit.cacheType).subtracting(.memory))
            }
        }
        guard let data = hit.data else { return queryOriginalOrDownload(operation, plan) }
        let source = FetchSource(
            content: plan.isDerived ? .productBytes(data) : .originalBytes(data),
            origin: .keyEntry(key: key, levels: hit.cacheType), response: nil, memoryHoldsImage: hit.image != nil)
        let jobKey = CacheKeys.composite([("cache", String(hit.cacheType.rawValue)), ("key", key)])
        let decodeOptions = plan.isDerived ? plan.productDecodeOptions : plan.decodeOptions
        let inline = plan.options.contains(.queryDiskDataSync)
        guard revalidation != .none else {
            return subscribe(
                operation, plan, jobKey: jobKey, inline: inline, decodeOptions: decodeOptions,
                cacheOrigin: source.origin, fallback: { self.queryOriginalOrDownload($0, plan) }
            ) { job in
                job.sourceSucceeded(source)
                return nil
            }
        }
        // Revalidation needs the cached image first: decode it through an inner handle, then download. An entry
        // that doesn't decode is removed by the job and revalidated as absent.
        let inner = ImageLoadOperation(url: plan.url, manager: nil, callbackQueue: .current, progress: nil) { result in
            guard case .success(let decoded) = result, decoded.isFinal else {
                return self.download(operation, plan, cached: nil)
            }
            self.keepForRevalidation(decoded, hit: hit, key: key, revalidation, operation, plan)
            var withImage = hit
            withImage.image = decoded.image
            self.download(operation, plan, cached: withImage)
        }
        operation.attach(query: inner)
        subscribe(
            inner, plan, jobKey: jobKey, inline: inline, decodeOptions: decodeOptions, cacheOrigin: source.origin,
            fallback: nil
        ) { job in
            job.sourceSucceeded(source)
            return nil
        }
    }

    /// A derived key missed: look for the untransformed original before downloading.
    func queryOriginalOrDownload(_ operation: ImageLoadOperation, _ plan: LoadPlan) {
        guard plan.isDerived, let originalKey = plan.originalKey, !plan.options.contains(.fromLoaderOnly),
            plan.originalQueryCacheType != .none
        else { return download(operation, plan, cached: nil) }
        // A decoded original serves only loads whose options work on pixels; the others decode its bytes, which a
        // memory hit then reads from the next level (`.queryMemoryData`).
        let usesImage = plan.decodedOriginalServes
        let query = plan.originalCache.queryImageClaimingMiss(
            forKey: originalKey,
            options: usesImage ? plan.options.subtracting(.queryMemoryData) : plan.options.union(.queryMemoryData),
            context: plan.context, cacheType: plan.originalQueryCacheType
        ) { result in
            operation.detachQuery()
            guard case .success(let hit?) = result else {
                if case .failure(let error) = result, error.isCancellation { return operation.finish(.failure(error)) }
                operation.addClaim(
                    MissClaim(cache: plan.originalCache, key: originalKey, levels: plan.originalQueryCacheType))
                return self.download(operation, plan, cached: nil)
            }
            // A stale original is fetched again (its bytes are this load's source, not the entry it revalidates).
            guard Revalidation.serves(hit.metadata, options: plan.options) else {
                return self.download(operation, plan, cached: nil)
            }
            // A still image's pixels serve any thumbnail (resampled); an animation's only at full size.
            let sized = plan.decodeOptions.thumbnailPixelSize != nil || plan.decodeOptions.scaleDownLimitBytes != nil
            let image = usesImage ? hit.image.flatMap { !$0.isAnimated || !sized ? $0 : nil } : nil
            let content: FetchSource.Content
            if let image {
                content = .originalImage(image, bytes: hit.data)
            } else if let data = hit.data {
                content = .originalBytes(data)
            } else {
                return self.download(operation, plan, cached: nil)
            }
            let source = FetchSource(
                content: content, origin: .originalEntry(key: originalKey, levels: hit.cacheType), response: nil)
            self.subscribe(
                operation, plan,
                jobKey: CacheKeys.composite([
                    ("original", image == nil ? "bytes" : "image"), ("levels", String(hit.cacheType.rawValue)),
                    ("key", originalKey),
                ]),
                inline: plan.options.contains(.queryDiskDataSync), decodeOptions: plan.decodeOptions,
                cacheOrigin: source.origin, fallback: { self.download($0, plan, cached: nil) },
                // A fetch that stored this original moments ago stored the product in memory first: use it rather
                // than transform again.
                recheck: self.memoryRecheck(plan, operation)
            ) { job in
                job.sourceSucceeded(source)
                return nil
            }
        }
        operation.attach(query: query)
    }
}
