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
    ///   - progress: bytes received / expected, on the callback queue.
    ///   - completed: zero or more non-final deliveries (progressive previews; the cached image of a
    ///     ``ImageOptions/refreshCached`` load), then exactly one final result. Memory hits complete before this
    ///     method returns (with the default ``CallbackQueue/current``).
    /// - Returns: the handle that cancels this load only.
    @discardableResult
    public func loadImage(
        with url: URL?, options: ImageOptions = [], context: ImageContext? = nil,
        progress: ImageProgressHandler? = nil, completed: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        let requestContext = context ?? ImageContext()
        guard let url, !url.absoluteString.isEmpty, url.scheme != nil else {
            return failedOperation(
                .invalidURL(url == nil ? "nil URL" : "empty or relative URL"), requestContext, completed)
        }
        if !options.contains(.retryFailed) && isFailedURL(url) {
            let error = ImageError(.blockedURL, stage: .request, message: url.absoluteString)
            return failedOperation(error, requestContext, completed)
        }
        var effectiveOptions = options
        var effectiveContext = mergedContext(requestContext)
        if let processor = optionsProcessor {
            let processed = processor.processedResult(for: url, options: effectiveOptions, context: effectiveContext)
            effectiveOptions = processed.options
            effectiveContext = processed.context
        }
        let plan = LoadPlan(
            url: url, options: effectiveOptions, context: effectiveContext, manager: self,
            requestContext: requestContext)
        let operation = ImageLoadOperation(
            url: url, manager: self, callbackQueue: plan.callbackQueue, progress: progress, completion: completed)
        start(operation, plan)
        // A load that already finished (a memory hit) needs no bookkeeping. Otherwise register it for cancelAll;
        // if it finished meanwhile, `finish` may have unregistered before we registered, so check again.
        if !operation.isFinished {
            register(operation)
            if operation.isFinished { unregister(operation) }
        }
        return operation
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

    private func failedOperation(
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

    private func start(_ operation: ImageLoadOperation, _ plan: LoadPlan) {
        guard let key = plan.key, !plan.options.contains(.fromLoaderOnly), plan.queryCacheType != .none else {
            return queryOriginalOrDownload(operation, plan)
        }
        // Revalidation needs the entry's validators, which live with the bytes: read them even on a memory hit.
        let queryOptions = plan.options.contains(.refreshCached) ? plan.options.union(.queryMemoryData) : plan.options
        let query = plan.cache.queryImage(
            forKey: key, options: queryOptions, context: plan.context, cacheType: plan.queryCacheType
        ) { result in
            operation.detachQuery()
            switch result {
            case .success(let hit?) where hit.image != nil || hit.data != nil:
                self.handleHit(hit, key: key, operation, plan)
            case .failure(let error) where error.isCancellation:
                operation.finish(.failure(error))
            case .success, .failure:
                self.queryOriginalOrDownload(operation, plan)
            }
        }
        operation.attach(query: query)
    }

    private func handleHit(_ hit: CacheQueryResult, key: String, _ operation: ImageLoadOperation, _ plan: LoadPlan) {
        if let image = hit.image {
            let result = ImageResult(
                image: image, data: hit.data, cacheType: hit.cacheType, url: plan.url, cacheKey: key)
            guard plan.options.contains(.refreshCached) else { return operation.finish(.success(result)) }
            operation.deliverCached(result)
            return download(operation, plan, cached: hit)
        }
        let source = FetchSource(
            data: hit.data, image: nil, response: nil, cacheType: hit.cacheType, role: .keyHit)
        let jobKey = "cache|\(hit.cacheType.rawValue)|\(key)"
        guard plan.options.contains(.refreshCached) else {
            return subscribe(operation, plan, jobKey: jobKey, inline: plan.options.contains(.queryDiskDataSync)) {
                job in
                job.sourceSucceeded(source)
                return nil
            }
        }
        // Revalidation needs the cached image first: decode it through an inner handle, then download.
        let inner = ImageLoadOperation(url: plan.url, manager: nil, callbackQueue: .current, progress: nil) { result in
            guard case .success(let decoded) = result, decoded.isFinal else {
                return self.download(operation, plan, cached: hit)
            }
            operation.deliverCached(decoded)
            var withImage = hit
            withImage.image = decoded.image
            self.download(operation, plan, cached: withImage)
        }
        operation.attach(query: inner)
        subscribe(inner, plan, jobKey: jobKey, inline: plan.options.contains(.queryDiskDataSync)) { job in
            job.sourceSucceeded(source)
            return nil
        }
    }

    /// A derived key missed: look for the untransformed original before downloading.
    private func queryOriginalOrDownload(_ operation: ImageLoadOperation, _ plan: LoadPlan) {
        guard plan.isDerived, let originalKey = plan.originalKey, !plan.options.contains(.fromLoaderOnly),
            plan.originalQueryCacheType != .none
        else { return download(operation, plan, cached: nil) }
        let query = plan.originalCache.queryImage(
            forKey: originalKey, options: plan.options.subtracting(.queryMemoryData), context: plan.context,
            cacheType: plan.originalQueryCacheType
        ) { result in
            operation.detachQuery()
            guard case .success(let hit?) = result else {
                if case .failure(let error) = result, error.isCancellation { return operation.finish(.failure(error)) }
                return self.download(operation, plan, cached: nil)
            }
            // A thumbnail must be decoded from bytes; a full-size image in memory can be transformed directly.
            let usableImage = plan.decodeOptions.thumbnailPixelSize == nil ? hit.image : nil
            guard hit.data != nil || usableImage != nil else { return self.download(operation, plan, cached: nil) }
            let source = FetchSource(
                data: hit.data, image: hit.data == nil ? usableImage : nil, response: nil, cacheType: hit.cacheType,
                role: .originalHit)
            self.subscribe(
                operation, plan, jobKey: "original|\(hit.cacheType.rawValue)|\(originalKey)",
                inline: plan.options.contains(.queryDiskDataSync)
            ) { job in
                job.sourceSucceeded(source)
                return nil
            }
        }
        operation.attach(query: query)
    }

    // MARK: Download

    private func download(_ operation: ImageLoadOperation, _ plan: LoadPlan, cached: CacheQueryResult?) {
        let url = plan.url
        let refusal: ImageError?
        if plan.options.contains(.fromCacheOnly) {
            refusal = ImageError(.cacheMiss, stage: .cacheQuery, message: "not cached and .fromCacheOnly is set")
        } else if delegate?.imageManager(self, shouldDownloadImageFor: url) == false {
            refusal = ImageError(.cacheMiss, stage: .download, message: "the delegate refused the download")
        } else if !plan.loader.canRequestImage(for: url) {
            refusal = ImageError(.noLoader, stage: .download, message: "no loader for \(url.scheme ?? "this URL")")
        } else {
            refusal = nil
        }
        if let refusal {
            // A revalidating load that may not download keeps its cached image as the final result.
            return operation.finish(.failure(cached == nil ? refusal : ImageError(.cacheNotModified, stage: .download)))
        }
        var context = plan.context
        var keyParts = ["load", url.absoluteString]
        if plan.options.contains(.handleCookies) { keyParts.append("cookies") }
        if plan.options.contains(.allowInvalidSSLCertificates) { keyParts.append("insecure") }
        if let cached {
            context.loaderCachedImage = cached.image
            context.loaderCachedMetadata = cached.metadata
            keyParts.append("revalidate:\(cached.metadata?.etag ?? "")|\(cached.metadata?.lastModified ?? "")")
        }
        if plan.isolatesDownload { keyParts.append("isolated:\(nextID())") }
        let loaderContext = context
        let recheck = cached == nil ? memoryRecheck(plan) : nil
        subscribe(operation, plan, jobKey: keyParts.joined(separator: "|"), inline: false, recheck: recheck) { job in
            plan.loader.requestImage(
                with: url, options: plan.options, context: loaderContext,
                progress: { job.progress($0) },
                completion: { result in
                    switch result {
                    case .success(let loaded):
                        self.removeFailedURL(url)
                        job.sourceSucceeded(
                            FetchSource(
                                data: loaded.data, image: loaded.image, response: loaded.response, cacheType: .none,
                                role: .download))
                    case .failure(let error):
                        self.recordFailure(error, plan: plan)
                        job.sourceFailed(error)
                    }
                })
        }
    }

    /// Puts the URL on the failed-URL list when the delegate (or else the loader) says the error is permanent.
    func recordFailure(_ error: ImageError, plan: LoadPlan) {
        guard !error.isCancellation, error.code != .cacheNotModified else { return }
        let block =
            delegate?.imageManager(self, shouldBlockFailedURL: plan.url, error: error)
            ?? plan.loader.shouldBlockFailedURL(plan.url, error: error)
        if block { failedURLs.withLock { $0.insert(plan.url) } }
    }

    // MARK: Jobs

    /// Joins the job under `jobKey`, or starts it.
    ///
    /// `recheck` closes the window between a cache miss and a job that finished meanwhile: a job stores its result
    /// in memory before it ends, so when no job is running the memory level is asked again, and when a job with
    /// this key ended between that look and taking the registry lock, the look is repeated. Without it, 10,000 loads of 100 URLs would download some URLs twice.
    private func subscribe(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, jobKey: String, inline: Bool,
        recheck: (@Sendable () -> ImageResult?)? = nil,
        startSource: @escaping @Sendable (FetchJob) -> (any ImageOperation)?
    ) {
        let id = nextID()
        let decodeKey = DecodeKey(options: plan.decodeOptions, coder: plan.coder)
        let productKey = ProductKey(
            decode: decodeKey, cacheKey: plan.key, transformerKey: plan.transformer?.transformerKey,
            transformAnimated: plan.options.contains(.transformAnimatedImage),
            storeCacheType: plan.storeCacheType.rawValue, originalStoreCacheType: plan.originalStoreCacheType.rawValue)
        let subscriber = FetchJob.Machine.Subscriber(
            id: id, decodeKey: decodeKey, productKey: productKey,
            waitsForStore: plan.options.contains(.waitStoreCache),
            info: FetchSubscriber(operation: operation, plan: plan))
        var attempts = 0
        while true {
            let seen = jobs.withLock { $0.generation }
            // A finished job already stored its result in memory; a miss after it ended needs a new job.
            var lookedAfterEndOf: FetchJob?
            if let recheck {
                let live = jobs.withLock { $0.jobs[jobKey] }
                if live == nil || live?.isFinished == true {
                    if let hit = recheck() { return operation.finish(.success(hit)) }
                    lookedAfterEndOf = live
                }
            }
            let joined = jobs.withLock { registry -> (FetchJob, [FetchJob.Machine.Action])? in
                let existing = registry.jobs[jobKey]
                if let existing, let actions = existing.subscribe(subscriber) {
                    return (existing, actions)
                }
                if recheck != nil && attempts < 100 {
                    if registry.ended(jobKey, since: seen) { return nil }
                    if let existing, existing !== lookedAfterEndOf { return nil }
                }
                let job = FetchJob(key: jobKey, manager: self, runsInline: inline, startSource: startSource)
                registry.jobs[jobKey] = job
                return (job, job.subscribe(subscriber) ?? [])
            }
            guard let (job, actions) = joined else {
                attempts += 1
                continue
            }
            if !operation.attach(job: job, id: id) {
                job.cancel(id)
                return
            }
            return job.performAndSettle(actions)
        }
    }

    func removeJob(_ job: FetchJob) {
        jobs.withLock { registry in
            if registry.jobs[job.key] === job { registry.jobs[job.key] = nil }
            registry.recordEnd(job.key)
        }
    }

    /// Asks the memory level again, synchronously; nil when it misses or would answer asynchronously.
    private func memoryRecheck(_ plan: LoadPlan) -> (@Sendable () -> ImageResult?)? {
        guard let key = plan.key, plan.queryCacheType.contains(.memory), !plan.options.contains(.fromLoaderOnly) else {
            return nil
        }
        return {
            let found = Locked<Image?>(nil)
            _ = plan.cache.queryImage(forKey: key, options: [], context: plan.context, cacheType: .memory) { result in
                if case .success(let hit?) = result, let image = hit.image { found.withLock { $0 = image } }
            }
            return found.value.map {
                ImageResult(image: $0, data: nil, cacheType: .memory, url: plan.url, cacheKey: key)
            }
        }
    }
}
