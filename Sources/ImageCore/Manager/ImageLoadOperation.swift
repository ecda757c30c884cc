import Foundation

/// The handle of one load: cancels its cache query and its share of a download; delivers its callbacks.
///
/// Guarantees: the completion receives exactly one final result; after ``cancel()`` that result is
/// `cancelled` and no image is ever delivered. Thread-safe (state behind a lock; callbacks run outside it).
public final class ImageLoadOperation: ImageOperation {
    private struct State {
        var finished = false
        var cancelled = false
        var query: (any ImageOperation)?
        var subscription: (job: FetchJob, id: UInt64)?
        /// The cached image delivered first by a revalidating load; the final result on "not modified".
        var cachedResult: ImageResult?
    }

    /// The URL being loaded (nil for an invalid request).
    public let url: URL?
    private let completion: ImageCompletionHandler
    private let progressHandler: ImageProgressHandler?
    let callbackQueue: CallbackQueue
    private weak let manager: ImageManager?
    private let state = Locked(State())

    init(
        url: URL?, manager: ImageManager?, callbackQueue: CallbackQueue, progress: ImageProgressHandler?,
        completion: @escaping ImageCompletionHandler
    ) {
        self.url = url
        self.manager = manager
        self.callbackQueue = callbackQueue
        self.progressHandler = progress
        self.completion = completion
    }

    /// True once cancelled.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// True once the final result was delivered (or is being delivered).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Cancels the load: the cache query, and this load's share of the download.
    public func cancel() {
        let (query, subscription, finishNow) = state.withLock {
            state -> ((any ImageOperation)?, (FetchJob, UInt64)?, Bool) in
            guard !state.finished, !state.cancelled else { return (nil, nil, false) }
            state.cancelled = true
            defer {
                state.query = nil
                state.subscription = nil
            }
            return (state.query, state.subscription, state.subscription == nil)
        }
        query?.cancel()
        if let (job, id) = subscription { job.cancel(id) }
        if finishNow { finish(.failure(.cancelled())) }
    }

    // MARK: Internal wiring

    /// Records the running cache query; returns false (and cancels it) when the load was cancelled meanwhile.
    func attach(query: (any ImageOperation)?) {
        guard let query else { return }
        let cancelled = state.withLock { state -> Bool in
            if state.cancelled || state.finished { return true }
            state.query = query
            return false
        }
        if cancelled { query.cancel() }
    }

    /// Records the job subscription; returns false when the load was already cancelled or finished.
    func attach(job: FetchJob, id: UInt64) -> Bool {
        state.withLock { state in
            guard !state.cancelled, !state.finished else { return false }
            state.query = nil
            state.subscription = (job, id)
            return true
        }
    }

    func detachQuery() { state.withLock { $0.query = nil } }

    /// Delivers `result` as a non-final delivery (and remembers it for "not modified").
    func deliverCached(_ result: ImageResult) {
        let nonFinal = result.nonFinal()
        let proceed = state.withLock { state -> Bool in
            guard !state.finished, !state.cancelled else { return false }
            state.cachedResult = result
            return true
        }
        if proceed { callbackQueue.execute { self.completion(.success(nonFinal)) } }
    }

    /// Delivers a progressive preview.
    func deliverPreview(_ result: ImageResult) {
        guard state.withLock({ !$0.finished && !$0.cancelled }) else { return }
        callbackQueue.execute { self.completion(.success(result.nonFinal())) }
    }

    /// Reports download progress.
    func reportProgress(received: Int, expected: Int?) {
        guard let progressHandler, let url, state.withLock({ !$0.finished && !$0.cancelled }) else { return }
        callbackQueue.execute { progressHandler(received, expected, url) }
    }

    /// Delivers the final result, once. A cancelled load never delivers an image; a revalidation that found the
    /// cached copy current delivers the cached image with ``ImageResult/isNotModified``.
    func finish(_ result: Result<ImageResult, ImageError>) {
        let final = state.withLock { state -> Result<ImageResult, ImageError>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.query = nil
            state.subscription = nil
            if state.cancelled { return .failure(.cancelled()) }
            if case .failure(let error) = result, error.code == .cacheNotModified, let cached = state.cachedResult {
                return .success(
                    ImageResult(
                        image: cached.image, data: cached.data, cacheType: cached.cacheType, url: cached.url,
                        cacheKey: cached.cacheKey, isFinal: true, isNotModified: true))
            }
            return result
        }
        guard let final else { return }
        manager?.unregister(self)
        callbackQueue.execute { self.completion(final) }
    }
}
