/// The handle of a cache query that keeps the query contract: the completion runs exactly once — with the answer,
/// or with `cancelled` at the moment ``cancel()`` is called, if that comes first.
///
/// SDWebImage's `SDImageCacheToken`: cancelling a query (`SDImageCache.queryCacheOperation`) calls its completion
/// at once, and the answer that the cache finds later is dropped. For cache implementations: create one with the
/// query's completion, hand the answer to ``complete(_:)`` from whatever thread finds it, and register what
/// stops the underlying work with ``onCancel(_:)``.
///
/// Thread-safe: the state sits behind a lock; the completion and the cancel handlers run after it is released —
/// the completion of a cancelled query on the thread that called ``cancel()``, before `cancel()` returns. When an
/// answer is already being delivered on another thread as ``cancel()`` is called, the answer wins and `cancel()`
/// does not wait for its completion to return: waiting could deadlock two queries whose completions cancel each
/// other (a composite's levels), and the load above (``ImageLoadOperation``) drops an answer that arrives after
/// its own cancel anyway.
public final class CacheQueryOperation: ImageOperation {
    /// What a query completes with.
    public typealias Completion = @Sendable (Result<CacheQueryResult?, ImageError>) -> Void

    private struct State: Sendable {
        var completion: Completion?
        var cancelled = false
        var handlers: [@Sendable () -> Void] = []
    }

    private let state: Locked<State>

    /// Creates the handle of a query that will call `completion` exactly once.
    public init(completion: @escaping Completion) { state = Locked(State(completion: completion)) }

    /// True once ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// True once the completion ran (with the answer or with `cancelled`): later answers are dropped.
    public var isFinished: Bool { state.withLock { $0.completion == nil } }

    /// Completes the query with `result`, unless it already completed (answered or cancelled).
    ///
    /// - Returns: whether `result` was delivered.
    @discardableResult
    public func complete(_ result: Result<CacheQueryResult?, ImageError>) -> Bool {
        let completion = state.withLock { state -> Completion? in
            defer {
                state.completion = nil
                state.handlers = []
            }
            return state.completion
        }
        completion?(result)
        return completion != nil
    }

    /// Adds what stops the underlying work on cancel; runs it at once when the query was already cancelled, and
    /// drops it when the query already answered.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if state.completion != nil { state.handlers.append(handler) }
            return false
        }
        if runNow { handler() }
    }

    /// Cancels: a query that has not answered completes now with `cancelled` (stage ``ImageError/Stage/cacheQuery``),
    /// then the cancel handlers run. Idempotent; no effect on the completion of a query that already answered.
    public func cancel() {
        let (completion, handlers) = state.withLock { state -> (Completion?, [@Sendable () -> Void]) in
            guard !state.cancelled else { return (nil, []) }
            state.cancelled = true
            defer {
                state.completion = nil
                state.handlers = []
            }
            return (state.completion, state.handlers)
        }
        completion?(.failure(.cancelled(stage: .cacheQuery)))
        for handler in handlers { handler() }
    }
}
