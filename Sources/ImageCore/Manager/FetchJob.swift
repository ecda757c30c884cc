import Foundation

/// The locked shell around ``FetchStateMachine``: starts the source, runs decodes and products on the CPU pool,
/// and delivers results. Every state change happens under `state`'s lock; every action runs after it is
/// released, and every action the machine returns is performed (the machine counts on it).
final class FetchJob: Sendable {
    typealias Machine = FetchStateMachine<
        UInt64, DecodeKey, ProductKey, FetchSubscriber, FetchSource, DecodedImage, FetchProduct
    >

    fileprivate enum SourceOperation {
        case none
        case running(any ImageOperation)
        case cancelRequested
    }

    /// The stores of this transfer's bytes by data loads, one per place (``SharedStore``): the loads sharing it
    /// write them once. Lives as long as the job, so a late load of the same transfer learns the outcome.
    private let keptStores = Locked<[KeptTarget: SharedStore]>([:])

    /// The one store of this transfer's bytes in `target`.
    func keptStore(for target: KeptTarget) -> SharedStore {
        keptStores.withLock { stores in
            if let store = stores[target] { return store }
            let store = SharedStore()
            stores[target] = store
            return store
        }
    }

    struct State {
        var machine = Machine()
        fileprivate var sourceOperation = SourceOperation.none
        var storedProducts: Set<ProductKey> = []
        var removed = false
        /// True once the job left the manager's registry (after its last actions ran).
        var forgotten = false
        /// What runs once it left (``afterRemoval(_:)``).
        var afterRemoval: [@Sendable () -> Void] = []
        var removedEntry = false
        var progressive: ProgressiveState?
        /// The subscribers' cache misses, ended once the job settles (see ``MissClaim``).
        var claims: [MissClaim] = []
        /// Stores started and not yet finished; the job settles only after the last.
        var pendingStores = 0
        /// Keys whose bytes were handed to a cache's disk levels.
        var storedKeys: Set<String> = []
        /// Keys this job decided for: a product was made for them (stored or not on purpose: a variant, `no-store`,
        /// no serializer bytes) or refused (a transform failed, a budget of the load's own). A claim on such a key
        /// that was not stored ends ``CacheMissOutcome/notStored``; a claim on a key nobody decided for (its loads
        /// were cancelled) ends ``CacheMissOutcome/abandoned``, whatever other keys of the job did.
        var decidedKeys: Set<String> = []
        /// The error that ended the fetch, if one did.
        var failure: ImageError?
        /// Set when the header check refused the image: whether that refusal is a verdict every load of the URL
        /// would reach (see ``headerRefusal(width:height:)``).
        var headerRefusalIsUniversal: Bool?
        /// True once the claims were ended.
        var settled = false
        /// The download's place ahead of the decoder, until its decode starts or the fetch ends.
        var admittedDownload: AdmittedDownload?
        /// The job's entry in its loader's cancel registry, until the source ended.
        var controlRegistration: DownloadControl.Registration?
        /// True once the source ended (the registry entry is then dropped, and a late registration with it).
        var sourceEnded = false

        /// When the job is done with every key (every subscriber served or gone, every store finished): the claims
        /// to end, with the outcome each key saw. Nil while work remains or after it settled.
        mutating func settle() -> [(MissClaim, CacheMissOutcome)]? {
            guard !settled, machine.isFinished, pendingStores == 0 else { return nil }
            settled = true
            defer { claims = [] }
            return claims.map { claim in
                if storedKeys.contains(claim.key) { return (claim, .stored) }
                if decidedKeys.contains(claim.key) { return (claim, .notStored) }
                if let failure {
                    let permanent = !failure.isCancellation && ImageLoaderPolicy.isPermanentFailure(failure)
                    return (claim, permanent ? .notStored : .abandoned)
                }
                return (claim, .abandoned)
            }
        }

        /// The priority last given to the source operation (FetchJob+Priority.swift).
        var sourcePriority: ImageLoadPriority?
        /// The source operation while it runs.
        var runningSource: (any ImageOperation)? {
            if case .running(let operation) = sourceOperation { return operation }
            return nil
        }
    }

    let key: String
    let manager: ImageManager
    /// The cache entry this job decodes, for cache jobs; nil for downloads.
    let cacheOrigin: FetchSource.Origin?
    private let startSource: @Sendable (FetchJob) -> (any ImageOperation)?
    /// Decode and transform inline on the calling thread (`.queryDiskDataSync` cache hits).
    private let runsInline: Bool
    let state = Locked(State())

    init(
        key: String, manager: ImageManager, runsInline: Bool, cacheOrigin: FetchSource.Origin?,
        startSource: @escaping @Sendable (FetchJob) -> (any ImageOperation)?
    ) {
        self.key = key
        self.manager = manager
        self.runsInline = runsInline
        self.cacheOrigin = cacheOrigin
        self.startSource = startSource
    }

    // MARK: Events in

    /// Adds a subscriber and takes over its cache misses; nil when the job already finished or is closed to
    /// newcomers (the caller then makes a new job and hands them to it).
    func subscribe(_ subscriber: Machine.Subscriber, claims: [MissClaim]) -> [Machine.Action]? {
        state.withLock { state in
            guard !state.machine.isFinished, !state.machine.isClosed else { return nil }
            state.claims += claims
            return state.machine.subscribe(subscriber)
        }
    }

    /// False once the job finished or was closed to newcomers: a load looking for this job's work needs another.
    var acceptsSubscribers: Bool { state.withLock { !$0.machine.isFinished && !$0.machine.isClosed } }

    /// The download's header check: the refusal of an image of `width × height` pixels when it is over the pixel
    /// budget of every subscriber, else nil (never while a data load waits: it wants the bytes, not the image). A
    /// refusal closes the job in the same step, so it is the verdict of exactly the loads it was made for: one that
    /// comes later — its budget may take the image — gets a job and a download of its own instead of a failure that
    /// was never its own (found by the model).
    ///
    /// The refusal is the subscribers' verdict, not that of the load that started the download (it may have left):
    /// it is universal — fit for the failed-URL list — when one of them judged by the defaults (its options change
    /// no budget), since the image is then over every load's default budget (``isUniversalVerdict(_:startedBy:)``).
    func headerRefusal(width: Int, height: Int) -> ImageError? {
        state.withLock { state in
            // A data load takes the bytes whatever image they hold: the transfer goes on for it.
            if state.machine.subscribers.values.contains(where: \.wantsSource) { return nil }
            var refusal: ImageError?
            for subscriber in state.machine.subscribers.values {
                do throws(ImageError) {
                    try subscriber.decodeKey.options.checkPixelBudget(width: width, height: height)
                    return nil
                } catch {
                    refusal = refusal ?? error
                }
            }
            if let refusal {
                state.machine.close()
                state.headerRefusalIsUniversal = state.machine.subscribers.values.contains {
                    $0.info.plan.traits.isUniversalVerdict(refusal)
                }
            }
            return refusal
        }
    }

    /// Whether `error`, which ended this job's download, is a verdict every load of the URL would reach: for the
    /// header check's refusal, what its subscribers' budgets made of it; for any other error, the verdict of
    /// `starter` (the load whose plan started the download: what changes the bytes fetched is the same for every
    /// load sharing the download, a field of its key).
    func isUniversalVerdict(_ error: ImageError, startedBy starter: LoadPlan) -> Bool {
        if error.code == .imageTooLarge, let universal = state.withLock({ $0.headerRefusalIsUniversal }) {
            return universal
        }
        return starter.traits.isUniversalVerdict(error)
    }

    func cancel(_ id: UInt64) {
        event { $0.machine.cancel(id) }
        refreshSourcePriority()
    }

    func sourceSucceeded(_ source: FetchSource) {
        endControlRegistration()
        event { $0.machine.sourceFinished(source) }
    }

    func sourceFailed(_ error: ImageError) {
        endControlRegistration()
        releaseDownload()
        event { state in
            if state.failure == nil { state.failure = error }
            return state.machine.sourceFailed(error)
        }
    }

    /// Runs an event on the machine, then its actions outside the lock.
    func event(_ body: (inout State) -> [Machine.Action]) {
        let (actions, finished, ended) = state.withLock {
            state -> ([Machine.Action], Bool, [(MissClaim, CacheMissOutcome)]?) in
            let actions = body(&state)
            let finished = state.machine.isFinished && !state.removed
            if finished { state.removed = true }
            return (actions, finished, state.settle())
        }
        perform(actions)
        if finished {
            releaseDownload()
            manager.removeJob(self)
            forgotten()
        }
        if let ended { for (claim, outcome) in ended { claim.end(outcome) } }
    }

    // MARK: The loader's cancel control

    /// Registers this download job in the loader's cancel registry under the caller's URL: a cancel there ends it
    /// (``abortByControl()``).
    func register(in control: DownloadControl, url: URL) {
        let registration = control.register(url: url, stage: .job) { [weak self] in self?.abortByControl() }
        let late = state.withLock { state -> Bool in
            if state.sourceEnded { return true }
            state.controlRegistration = registration
            return false
        }
        if late { registration.unregister() }
    }

    private func endControlRegistration() {
        let registration = state.withLock { state -> DownloadControl.Registration? in
            state.sourceEnded = true
            defer { state.controlRegistration = nil }
            return state.controlRegistration
        }
        registration?.unregister()
    }

    /// The loader cancelled this download: every load waiting on it ends with `cancelled`, the job gives back its
    /// admission place and leaves the manager's registry before this returns, so no later load joins it. The
    /// transfer itself is the loader's to cancel (it does so right after; a place still waiting in the admission
    /// queue was cancelled before, see ``DownloadControl``).
    func abortByControl() {
        sourceFailed(.cancelled(stage: .download))
    }

    /// Ties a download behind the manager's ``DownloadAdmission`` to this job: its place is given back when the
    /// first decode starts or the fetch ends without one (at once when that already happened).
    func adopt(_ download: AdmittedDownload) {
        let releaseNow = state.withLock { state -> Bool in
            if state.machine.isFinished { return true }
            if case .failed? = state.machine.source { return true }
            state.admittedDownload = download
            return false
        }
        if releaseNow { download.release() }
    }

    /// Gives the download's place ahead of the decoder back. Idempotent.
    func releaseDownload() {
        let download = state.withLock { state -> AdmittedDownload? in
            defer { state.admittedDownload = nil }
            return state.admittedDownload
        }
        download?.release()
    }

    /// Performs the actions of a subscription, then forgets the job if that subscription finished it.
    func performAndSettle(_ actions: [Machine.Action]) {
        perform(actions)
        let (finished, ended) = state.withLock { state -> (Bool, [(MissClaim, CacheMissOutcome)]?) in
            let finished = state.machine.isFinished && !state.removed
            if finished { state.removed = true }
            return (finished, state.settle())
        }
        if finished {
            releaseDownload()
            manager.removeJob(self)
            forgotten()
        }
        if let ended { for (claim, outcome) in ended { claim.end(outcome) } }
    }

    // MARK: Actions out

    func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .startSource:
                let operation = startSource(self)
                let cancelNow = state.withLock { state -> Bool in
                    if case .cancelRequested = state.sourceOperation { return true }
                    if let operation { state.sourceOperation = .running(operation) }
                    return false
                }
                if cancelNow { operation?.cancel() } else { refreshSourcePriority() }
            case .cancelSource:
                let operation = state.withLock { state -> (any ImageOperation)? in
                    defer { state.sourceOperation = .cancelRequested }
                    if case .running(let operation) = state.sourceOperation { return operation }
                    return nil
                }
                operation?.cancel()
            case .startDecode(let key, let source, let info):
                run { self.decode(key, source, info) }
            case .startProduct(let key, let decoded, let source, let info):
                // Ahead of queued decodes: this product frees a decoded image the job already holds.
                run(priority: .continuation) { self.produce(key, decoded: decoded, source: source, info: info) }
            case .deliver(let subscribers, let product):
                let cacheType = sourceCacheType
                for subscriber in subscribers {
                    let plan = subscriber.info.plan
                    subscriber.info.operation.finish(
                        .success(
                            ImageResult(
                                image: product.image, data: product.data, cacheType: cacheType, url: plan.url,
                                cacheKey: plan.key)))
                }
            case .deliverSource(let subscribers, let source):
                // A loader that handed over an image it made, without its bytes, has nothing a data load can take:
                // a typed failure, not an empty success.
                guard let data = source.originalData, !data.isEmpty else {
                    let error = ImageError(
                        .invalidDownloadResponse, stage: .download, message: "the loader delivered no bytes")
                    for subscriber in subscribers { subscriber.info.operation.finish(.failure(error)) }
                    continue
                }
                for subscriber in subscribers where subscriber.info.operation.decideDataResult() {
                    var served = ImageDataResult(
                        data: data, response: source.response ?? ResponseMetadata(), url: subscriber.info.plan.url)
                    served.joinedTransfer = subscriber.info.operation.joinedTransfer
                    let result = served
                    guard let delivery = subscriber.info.deliverData else { continue }
                    delivery.keep?(result, self)
                    let queue = subscriber.info.operation.callbackQueue
                    if case .current = queue.kind {
                        delivery.deliver(result)
                    } else {
                        queue.execute { delivery.deliver(result) }
                    }
                }
            case .fail(let subscribers, let error):
                fail(subscribers.map(\.info), error)
            }
        }
    }

    /// Fails subscribers, or — when this job's cache entry proved unusable — sends each on to its fallback.
    private func fail(_ subscribers: [FetchSubscriber], _ error: ImageError) {
        let unusable = error.code == .unusableCacheEntry
        // An entry over this load's pixel budget is not broken: the load fails as a download of it would, and the
        // entry stays for loads with a larger budget.
        guard let origin = cacheOrigin, !error.isCancellation, error.code != .imageTooLarge,
            error.stage == .decode || unusable
        else {
            for subscriber in subscribers { subscriber.operation.finish(.failure(error)) }
            return
        }
        if !unusable { removeUndecodableEntry(origin, plan: subscribers.first?.plan, error: error) }
        for subscriber in subscribers {
            if let fallback = subscriber.fallback {
                fallback(subscriber.operation)
            } else {
                subscriber.operation.finish(.failure(error))
            }
        }
    }

    /// A cache entry that can't be decoded is a miss: remove it (once), log and count it.
    private func removeUndecodableEntry(_ origin: FetchSource.Origin, plan: LoadPlan?, error: ImageError) {
        let first = state.withLock { state -> Bool in
            defer { state.removedEntry = true }
            return !state.removedEntry
        }
        guard let plan, first else { return }
        // Every level the load asked: a memory image of the same key would be the same broken entry's decode.
        let (cache, key, levels): (any ImageCacheProtocol, String, ImageCacheType)
        switch origin {
        case .download: return
        case .keyEntry(let entryKey, _): (cache, key, levels) = (plan.cache, entryKey, plan.queryCacheType)
        case .originalEntry(let entryKey, _):
            (cache, key, levels) = (plan.originalCache, entryKey, plan.originalQueryCacheType)
        }
        manager.counters.withLock { $0.removedUndecodableCacheEntries += 1 }
        manager.log("removed undecodable cache entry \(key) (\(error)); fetching it again")
        cache.removeImage(forKey: key, cacheType: levels, completion: nil)
    }

    private var sourceCacheType: ImageCacheType {
        state.withLock { state in
            if case .done(let source)? = state.machine.source { return source.cacheType }
            return .none
        }
    }

    func run(priority: WorkPool.Priority = .normal, _ work: @escaping @Sendable () -> Void) {
        if runsInline { work() } else { manager.workPool.submit(priority: priority, work) }
    }
}

extension ImageError.Code {
    /// Internal: a cache entry decoded fine but holds a variant this load can't use; the load falls back to the
    /// next source. Never delivered to callers.
    static let unusableCacheEntry = ImageError.Code("unusableCacheEntry")
}
