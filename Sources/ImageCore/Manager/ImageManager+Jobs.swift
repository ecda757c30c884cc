import Foundation

extension ImageManager {
    /// Joins the job under `jobKey`, or starts it.
    ///
    /// Every action the job's machine returns is performed, even when the load was cancelled while it joined:
    /// another load may have joined the same job in between and waits for the source this subscription started.
    ///
    /// `recheck` closes the window between a cache miss and a job that finished meanwhile: a job stores its result
    /// in memory before it ends, so when no job is running the memory level is asked again, and when a job with
    /// this key ended between that look and taking the registry lock, the look is repeated. Without it, 10,000
    /// loads of 100 URLs would download some URLs twice.
    func subscribe(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, jobKey: String, inline: Bool,
        decodeOptions: ImageDecodeOptions, deliverData: DataDelivery? = nil,
        cacheOrigin: FetchSource.Origin?,
        fallback: (@Sendable (ImageLoadOperation) -> Void)?, recheck: (@Sendable () -> ImageResult?)? = nil,
        startSource: @escaping @Sendable (FetchJob) -> (any ImageOperation)?
    ) {
        let id = nextID()
        let decodeKey = DecodeKey(options: decodeOptions, coder: plan.coder)
        let productKey = ProductKey(
            decode: decodeKey, loadDecode: plan.decodeOptions, cacheKey: plan.key,
            transformerKey: plan.transformer?.transformerKey,
            transformAnimated: plan.options.contains(.transformAnimatedImage), serializer: plan.serializerIdentity,
            encodeOptions: plan.context.imageEncodeOptions,
            storeCacheType: plan.storeCacheType.rawValue, originalStoreCacheType: plan.originalStoreCacheType.rawValue)
        let subscriber = FetchJob.Machine.Subscriber(
            id: id, decodeKey: decodeKey, productKey: productKey,
            waitsForStore: plan.options.contains(.waitStoreCache), wantsSource: deliverData != nil,
            info: FetchSubscriber(operation: operation, plan: plan, fallback: fallback, deliverData: deliverData))
        let claims = operation.takeClaims()
        var attempts = 0
        while true {
            let seen = jobs.withLock { $0.generation }
            // A finished job already stored its result in memory; a miss after it ended needs a new job.
            var lookedAfterEndOf: FetchJob?
            if let recheck {
                let live = jobs.withLock { $0.jobs[jobKey] }
                if live == nil || live?.acceptsSubscribers == false {
                    if let hit = recheck() {
                        for claim in claims { claim.end(.abandoned) }
                        return operation.finish(.success(hit))
                    }
                    lookedAfterEndOf = live
                }
            }
            let joined = jobs.withLock { registry -> (FetchJob, [FetchJob.Machine.Action])? in
                let existing = registry.jobs[jobKey]
                if let existing, let actions = existing.subscribe(subscriber, claims: claims) {
                    return (existing, actions)
                }
                if recheck != nil && attempts < 100 {
                    if registry.ended(jobKey, since: seen) { return nil }
                    if let existing, existing !== lookedAfterEndOf { return nil }
                }
                let job = FetchJob(
                    key: jobKey, manager: self, runsInline: inline, cacheOrigin: cacheOrigin, startSource: startSource)
                registry.jobs[jobKey] = job
                return (job, job.subscribe(subscriber, claims: claims) ?? [])
            }
            guard let (job, actions) = joined else {
                attempts += 1
                continue
            }
            let attached = operation.attach(job: job, id: id)
            job.performAndSettle(actions)
            if !attached { job.cancel(id) }
            return
        }
    }

    func removeJob(_ job: FetchJob) {
        jobs.withLock { registry in
            if registry.jobs[job.key] === job { registry.jobs[job.key] = nil }
            registry.recordEnd(job.key)
        }
    }

    /// Asks the memory level again, synchronously; nil when it misses, would answer asynchronously, or holds an
    /// image this load can't use.
    func memoryRecheck(_ plan: LoadPlan) -> (@Sendable () -> ImageResult?)? {
        guard let key = plan.key, plan.queryCacheType.contains(.memory), !plan.options.contains(.fromLoaderOnly) else {
            return nil
        }
        return {
            let found: Image?
            switch plan.cache.queryImageSync(forKey: key, options: [], context: plan.context, cacheType: .memory) {
            // A `.refreshStale` load serves only a fresh entry without asking the loader.
            case .hit(let hit):
                found = Revalidation.serves(hit.metadata, options: plan.options) ? hit.image : nil
            case .miss: found = nil
            case .needsAsyncQuery:
                // A cache without the synchronous query may still answer memory before returning.
                let answer = Locked<Image?>(nil)
                _ = plan.cache.queryImage(forKey: key, options: [], context: plan.context, cacheType: .memory) {
                    if case .success(let hit?) = $0, let image = hit.image,
                        Revalidation.serves(hit.metadata, options: plan.options)
                    {
                        answer.withLock { $0 = image }
                    }
                }
                found = answer.value
            }
            return found.flatMap(plan.deliverable(fromCached:)).map {
                ImageResult(image: $0, data: nil, cacheType: .memory, url: plan.url, cacheKey: key)
            }
        }
    }
}
