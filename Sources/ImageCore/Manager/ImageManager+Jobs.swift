import Foundation

/// A look at the memory level before a load starts a job (``ImageManager/subscribe(_:_:jobKey:inline:decodeOptions:deliverData:cacheOrigin:fallback:recheck:startSource:)``):
/// what to do to answer the load from memory, or nil when memory can't answer it.
typealias MemoryRecheck = @Sendable () -> (@Sendable () -> Void)?

extension ImageManager {
    /// Joins the job under `jobKey`, or starts it.
    ///
    /// Every action the job's machine returns is performed, even when the load was cancelled while it joined:
    /// another load may have joined the same job in between and waits for the source this subscription started.
    ///
    /// `recheck` closes the window between a cache miss and a job that finished meanwhile: a job stores its result
    /// in memory before it ends (a kept data load's bytes are stored before the job is forgotten), so when no job is
    /// running the memory level is asked again, and when a job with this key ended between that look and taking the
    /// registry lock, the look is repeated. Without it, 10,000 loads of 100 URLs would download some URLs twice.
    func subscribe(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, jobKey: String, inline: Bool,
        decodeOptions: ImageDecodeOptions, deliverData: DataDelivery? = nil,
        cacheOrigin: FetchSource.Origin?,
        fallback: (@Sendable (ImageLoadOperation) -> Void)?, recheck: MemoryRecheck? = nil,
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
        join(
            operation, subscriber, claims: operation.takeClaims(), jobKey: jobKey, inline: inline,
            cacheOrigin: cacheOrigin, recheck: recheck, startSource: startSource)
    }

    /// The loop of ``subscribe(_:_:jobKey:inline:decodeOptions:deliverData:cacheOrigin:fallback:recheck:startSource:)``.
    /// A job that finished but is not yet forgotten is still running its last actions — a data load's delivery stores
    /// its bytes there — so a load whose look at memory missed waits for it to be forgotten and looks again, instead
    /// of starting a second transfer beside it.
    private func join(
        _ operation: ImageLoadOperation, _ subscriber: FetchJob.Machine.Subscriber, claims: [MissClaim],
        jobKey: String, inline: Bool, cacheOrigin: FetchSource.Origin?, recheck: MemoryRecheck?,
        startSource: @escaping @Sendable (FetchJob) -> (any ImageOperation)?
    ) {
        enum Step {
            case join(FetchJob, [FetchJob.Machine.Action], joined: Bool)
            case lookAgain
            case afterEnd(FetchJob)
        }
        let id = subscriber.id
        var attempts = 0
        while true {
            let seen = jobs.withLock { $0.generation }
            // A finished job already stored its result in memory; a miss after it ended needs a new job.
            var lookedAfterEndOf: FetchJob?
            if let recheck {
                let live = jobs.withLock { $0.jobs[jobKey] }
                if live == nil || live?.acceptsSubscribers == false {
                    if let answer = recheck() {
                        for claim in claims { claim.end(.abandoned) }
                        return answer()
                    }
                    lookedAfterEndOf = live
                }
            }
            let step = jobs.withLock { registry -> Step in
                let existing = registry.jobs[jobKey]
                if let existing, let actions = existing.subscribe(subscriber, claims: claims) {
                    return .join(existing, actions, joined: true)
                }
                if recheck != nil && attempts < 100 {
                    if registry.ended(jobKey, since: seen) { return .lookAgain }
                    if let existing, existing !== lookedAfterEndOf { return .lookAgain }
                    if let existing, existing.isFinished { return .afterEnd(existing) }
                }
                let job = FetchJob(
                    key: jobKey, manager: self, runsInline: inline, cacheOrigin: cacheOrigin, startSource: startSource)
                registry.jobs[jobKey] = job
                return .join(job, job.subscribe(subscriber, claims: claims) ?? [], joined: false)
            }
            let job: FetchJob
            let actions: [FetchJob.Machine.Action]
            let isJoined: Bool
            switch step {
            case .join(let found, let foundActions, let joined):
                (job, actions, isJoined) = (found, foundActions, joined)
            case .lookAgain:
                attempts += 1
                continue
            case .afterEnd(let ending):
                let resumed = ending.afterRemoval {
                    self.join(
                        operation, subscriber, claims: claims, jobKey: jobKey, inline: inline,
                        cacheOrigin: cacheOrigin, recheck: recheck, startSource: startSource)
                }
                if resumed { return }
                attempts += 1
                continue
            }
            let attached = operation.attach(job: job, id: id, joined: isJoined)
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

    /// Asks the memory level again, synchronously, and finishes `operation` with what it holds; nil when it misses,
    /// would answer asynchronously, or holds an image this load can't use.
    func memoryRecheck(_ plan: LoadPlan, _ operation: ImageLoadOperation) -> MemoryRecheck? {
        guard let recheck = memoryRecheck(plan) else { return nil }
        return {
            guard let hit = recheck() else { return nil }
            return { @Sendable in operation.finish(.success(hit)) }
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
