import Foundation
import Synchronization

/// The handle of one load: cancels its cache query and its share of a download; delivers its callbacks.
///
/// Delivery contract: progress reports and non-final results (previews, the cached image of a revalidating
/// load), then exactly one final result, then nothing. Deliveries never overlap and arrive in the order they
/// were made: they go through one queue per operation, drained by one thread at a time on the callback queue.
/// After ``cancel()`` the final result is `cancelled` and no image is delivered; after the load's deadline
/// (``ImageContext/loadTimeout``) passed, `timedOut`. Thread-safe (state behind a
/// lock; callbacks run outside it). Its ``priority`` can change while it waits or downloads (Nuke's
/// `ImageTask.priority`).
public final class ImageLoadOperation: PrioritizableOperation {
    private enum Delivery: Sendable {
        case progress(received: Int, expected: Int?)
        case result(Result<ImageResult, ImageError>)
    }

    /// The cached result of a revalidating load, boxed: `ImageResult` holds Foundation's resilient `URL` and
    /// `Data`, so an inline one would give `State` a layout known only at run time, and every load would pay for
    /// it.
    private final class CachedResult: Sendable {
        let result: ImageResult
        /// Renews the cached entry when the revalidation says it is current (given the 304's response, if any).
        let renew: (@Sendable (ResponseMetadata?) -> Void)?
        init(_ result: ImageResult, renew: (@Sendable (ResponseMetadata?) -> Void)? = nil) {
            self.result = result
            self.renew = renew
        }
    }

    private final class QueryBox: Sendable {
        let operation: any ImageOperation
        init(operation: any ImageOperation) { self.operation = operation }
    }

    private struct State {
        /// The final result was accepted (it may still be queued behind earlier deliveries).
        var finished = false
        var cancelled = false
        /// Ended by its deadline (``ImageContext/loadTimeout``): `cancelled` too, with `timedOut` as its result.
        var expired = false
        /// Boxed: an inline optional existential would make every load's state pay for its value witnesses.
        var query: QueryBox?
        var subscription: (job: FetchJob, id: UInt64)?
        /// It joined a job another load had started (its transfer is shared: ``ImageDataResult/joinedTransfer``).
        var joinedJob = false
        /// The cached image delivered first by a revalidating load; the final result on "not modified".
        var cachedResult: CachedResult?
        /// Deliveries waiting for the one that is running.
        var pending: [Delivery] = []
        /// A thread is running deliveries; others only enqueue.
        var draining = false
        /// Cache misses this load holds until it joins a job (see ``MissClaim``).
        var claims: [MissClaim] = []
        /// The priority set through ``priority``; nil until set (the load's options decide).
        var priority: ImageLoadPriority?
        /// Its deadline's entry in ``DeadlineTimer``, removed when the load finishes first.
        var deadline: DeadlineTimer.Token?
    }

    /// The URL being loaded (nil for an invalid request).
    public var url: URL? { hasURL ? loadedURL : nil }
    // A plain `URL` is cheaper to store and copy than a `URL?` (Foundation's `URL` is resilient, and an optional of
    // it goes through the runtime's generic value witnesses): the hit path stores one per load.
    private let loadedURL: URL
    private let hasURL: Bool
    private static let noURL = URL(string: "about:blank")!
    private let completion: ImageCompletionHandler
    private let progressHandler: ImageProgressHandler?
    let callbackQueue: CallbackQueue
    private weak let manager: ImageManager?
    /// Stored in the object itself (not a `Locked` box): one allocation per load instead of two.
    private let state: Mutex<State>

    init(
        url: URL?, manager: ImageManager?, callbackQueue: CallbackQueue, progress: ImageProgressHandler?,
        completion: @escaping ImageCompletionHandler
    ) {
        self.loadedURL = url ?? Self.noURL
        self.hasURL = url != nil
        self.manager = manager
        self.callbackQueue = callbackQueue
        self.progressHandler = progress
        self.completion = completion
        self.state = Mutex(State())
    }

    /// An operation created finished, for a result known before the operation exists (a memory hit): it has no
    /// other delivery to order against and nobody else holds it yet, so the result goes straight to `completion`
    /// (on the callback queue), with no lock and no queue.
    ///
    /// `result` is consumed: it becomes the delivered `Result` as it is, not a copy of each of its references.
    static func completed(
        url: URL, result: consuming ImageResult, callbackQueue: CallbackQueue,
        completion: @escaping ImageCompletionHandler
    ) -> ImageLoadOperation {
        let operation = ImageLoadOperation(
            url: url, callbackQueue: callbackQueue, completion: completion, finished: true)
        let delivered = Result<ImageResult, ImageError>.success(result)
        if case .current = callbackQueue.kind {
            completion(delivered)
        } else {
            callbackQueue.execute { completion(delivered) }
        }
        return operation
    }

    private init(url: URL, callbackQueue: CallbackQueue, completion: @escaping ImageCompletionHandler, finished: Bool) {
        self.loadedURL = url
        self.hasURL = true
        self.manager = nil
        self.callbackQueue = callbackQueue
        self.progressHandler = nil
        self.completion = completion
        self.state = Mutex(State(finished: finished))
    }

    /// True once cancelled (or ended by its deadline, ``ImageContext/loadTimeout``).
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// True once the final result was decided (it may still be on its way to the completion handler).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// The priority of this load's download: the last value set, else what ``ImageOptions/highPriority`` /
    /// ``ImageOptions/lowPriority`` ask for once the load waits on a download (`.normal` before that).
    ///
    /// Setting it reaches the download the load waits on, queued or running, now or when the load gets there; a
    /// download shared by several loads runs at the highest priority among them. No effect once finished.
    public var priority: ImageLoadPriority {
        get {
            let (explicit, subscription) = state.withLock { ($0.priority, $0.subscription) }
            return explicit ?? subscription.flatMap { $0.job.optionsPriority(of: $0.id) } ?? .normal
        }
        set {
            let job = state.withLock { state -> FetchJob? in
                guard !state.finished, !state.cancelled else { return nil }
                state.priority = newValue
                return state.subscription?.job
            }
            job?.refreshSourcePriority()
        }
    }

    /// The priority set through ``priority``, nil when none was.
    var explicitPriority: ImageLoadPriority? { state.withLock { $0.priority } }

    /// Cancels the load: the cache query, and this load's share of the download. The completion receives
    /// `cancelled` unless the final result was already decided.
    public func cancel() { end(expired: false) }

    /// The final result of a load whose deadline passed.
    static let expiredError = ImageError(
        .timedOut, stage: .request, message: "the load's deadline passed (loadTimeout)")

    /// Ends the load with ``expiredError`` unless its final result was decided: its deadline
    /// (``ImageContext/loadTimeout``) passed. It leaves its work as ``cancel()`` does.
    func expire() { end(expired: true) }

    private func end(expired: Bool) {
        let (query, subscription, finishNow) = state.withLock {
            state -> ((any ImageOperation)?, (FetchJob, UInt64)?, Bool) in
            guard !state.finished, !state.cancelled else { return (nil, nil, false) }
            state.cancelled = true
            state.expired = expired
            defer {
                state.query = nil
                state.subscription = nil
            }
            return (state.query?.operation, state.subscription, state.subscription == nil)
        }
        query?.cancel()
        if let (job, id) = subscription { job.cancel(id) }
        if finishNow { finish(.failure(expired ? Self.expiredError : .cancelled())) }
    }

    // MARK: Internal wiring

    /// Records the running cache query; cancels it when the load was cancelled meanwhile.
    func attach(query: (any ImageOperation)?) {
        guard let query else { return }
        let cancelled = state.withLock { state -> Bool in
            if state.cancelled || state.finished { return true }
            state.query = QueryBox(operation: query)
            return false
        }
        if cancelled { query.cancel() }
    }

    /// Records the job subscription; returns false when the load was already cancelled or finished.
    func attach(job: FetchJob, id: UInt64, joined: Bool) -> Bool {
        let attached = state.withLock { state in
            guard !state.cancelled, !state.finished else { return false }
            state.query = nil
            state.subscription = (job, id)
            state.joinedJob = joined
            return true
        }
        // A load joining a running download may raise its priority.
        if attached { job.refreshSourcePriority() }
        return attached
    }

    /// True when this load joined a job another load had started.
    var joinedTransfer: Bool { state.withLock { $0.joinedJob } }

    func detachQuery() { state.withLock { $0.query = nil } }

    /// Records the entry of the load's deadline, so that finishing removes it; a load already finished removes it
    /// at once.
    func attach(deadline: DeadlineTimer.Token) {
        let finished = state.withLock { state -> Bool in
            if state.finished { return true }
            state.deadline = deadline
            return false
        }
        if finished { DeadlineTimer.shared.remove(deadline) }
    }

    /// Holds a query's miss until the load joins a job; a load that already finished ends it at once.
    func addClaim(_ claim: MissClaim) {
        let kept = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.claims.append(claim)
            return true
        }
        if !kept { claim.end(.abandoned) }
    }

    /// Hands the load's misses over (to the job it joins).
    func takeClaims() -> [MissClaim] {
        state.withLock { state in
            defer { state.claims = [] }
            return state.claims
        }
    }

    /// Delivers `result` as a non-final delivery (and remembers it for "not modified").
    func deliverCached(_ result: ImageResult) {
        enqueue(.result(.success(result.nonFinal()))) { state in
            state.cachedResult = CachedResult(result)
            return true
        }
    }

    /// Remembers `result` as the answer to "not modified" without delivering it (a `.refreshStale` revalidation);
    /// `renew` runs when that answer is given.
    func keepCached(_ result: ImageResult, renew: @escaping @Sendable (ResponseMetadata?) -> Void) {
        state.withLock { state in
            if !state.finished { state.cachedResult = CachedResult(result, renew: renew) }
        }
    }

    /// Delivers a progressive preview.
    func deliverPreview(_ result: ImageResult) {
        enqueue(.result(.success(result.nonFinal()))) { _ in true }
    }

    /// Reports download progress.
    func reportProgress(received: Int, expected: Int?) {
        guard progressHandler != nil, hasURL else { return }
        enqueue(.progress(received: received, expected: expected)) { _ in true }
    }

    /// Delivers the final result, once. A cancelled load never delivers an image; a revalidation that found the
    /// cached copy current delivers the cached image with ``ImageResult/isNotModified``, and renews the entry unless
    /// `renews` is false (the load was not allowed to ask the loader: nothing said the entry is current).
    func finish(_ result: Result<ImageResult, ImageError>, renews: Bool = true) {
        var deadline: DeadlineTimer.Token?
        var renewal: (() -> Void)?
        let decided = state.withLock { state -> (Result<ImageResult, ImageError>, Bool, [MissClaim])? in
            guard !state.finished else { return nil }
            state.finished = true
            state.query = nil
            state.subscription = nil
            deadline = state.deadline
            state.deadline = nil
            let claims = state.claims
            state.claims = []
            var final = result
            if state.cancelled {
                final = .failure(state.expired ? Self.expiredError : .cancelled())
            } else if case .failure(let error) = result, error.code == .cacheNotModified,
                let kept = state.cachedResult
            {
                let cached = kept.result
                if renews, let renew = kept.renew { renewal = { renew(error.response) } }
                final = .success(
                    ImageResult(
                        image: cached.image, data: cached.data, cacheType: cached.cacheType, url: cached.url,
                        cacheKey: cached.cacheKey, isFinal: true, isNotModified: true))
            }
            return (final, Self.claim(&state, or: .result(final)), claims)
        }
        guard let (final, start, claims) = decided else { return }
        if let deadline { DeadlineTimer.shared.remove(deadline) }
        renewal?()
        // Misses not handed to a job: this load ends without fetching for them.
        for claim in claims { claim.end(.abandoned) }
        manager?.unregister(self)
        if start { startDrain(first: .result(final)) }
    }

    /// Decides the final result of a data load, whose bytes the job hands its caller itself (a data load has no
    /// image to put through the delivery queue, and nothing else is ever queued for it). True when this call decided
    /// it; false when the load was already finished, or was cancelled or expired — it then finishes with `cancelled`
    /// or `timedOut` here, as ``finish(_:)`` would.
    func decideDataResult() -> Bool {
        var deadline: DeadlineTimer.Token?
        let decided = state.withLock { state -> (decided: Bool, claims: [MissClaim])? in
            guard !state.finished else { return nil }
            guard !state.cancelled else { return (false, []) }
            state.finished = true
            state.query = nil
            state.subscription = nil
            deadline = state.deadline
            state.deadline = nil
            defer { state.claims = [] }
            return (true, state.claims)
        }
        guard let decided else { return false }
        guard decided.decided else {
            finish(.failure(.cancelled()))
            return false
        }
        if let deadline { DeadlineTimer.shared.remove(deadline) }
        for claim in decided.claims { claim.end(.abandoned) }
        manager?.unregister(self)
        return true
    }

    // MARK: Delivery queue

    /// Queues a non-final delivery unless the load is finished or cancelled; `accept` may update the state.
    private func enqueue(_ delivery: Delivery, accept: (inout State) -> Bool) {
        let start = state.withLock { state -> Bool? in
            guard !state.finished, !state.cancelled, accept(&state) else { return nil }
            return Self.claim(&state, or: delivery)
        }
        if start == true { startDrain(first: delivery) }
    }

    /// Drains on the callback queue; with ``CallbackQueue/current`` right here, without a closure.
    private func startDrain(first delivery: Delivery) {
        if case .current = callbackQueue.kind {
            drain(first: delivery)
        } else {
            callbackQueue.execute { self.drain(first: delivery) }
        }
    }

    /// True when the caller becomes the draining thread (and runs `delivery` itself); else queues it.
    private static func claim(_ state: inout State, or delivery: Delivery) -> Bool {
        if state.draining {
            state.pending.append(delivery)
            return false
        }
        state.draining = true
        return true
    }

    /// Runs `first`, then whatever was queued meanwhile, until the queue is empty.
    private func drain(first: Delivery) {
        var next: Delivery? = first
        while let delivery = next {
            switch delivery {
            case .progress(let received, let expected):
                if let progressHandler, hasURL { progressHandler(received, expected, loadedURL) }
            case .result(let result):
                completion(result)
            }
            next = state.withLock { state -> Delivery? in
                guard !state.pending.isEmpty else {
                    state.draining = false
                    return nil
                }
                return state.pending.removeFirst()
            }
        }
    }
}
