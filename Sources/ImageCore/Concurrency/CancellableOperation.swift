import Synchronization

/// A general-purpose ``ImageOperation``: a cancelled flag plus handlers run once on cancellation.
///
/// Thread-safe: the state sits behind a `Mutex`; handlers run after the lock is released, on the thread that
/// cancels. A handler added after cancellation runs at once.
public final class CancellableOperation: ImageOperation {
    private struct State {
        var cancelled = false
        var handlers: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    /// Creates an operation that is not cancelled.
    public init() {}

    /// Creates an operation that runs `onCancel` when cancelled.
    public init(onCancel: @escaping @Sendable () -> Void) {
        state.withLock { $0.handlers.append(onCancel) }
    }

    /// True once cancelled.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Adds a handler; runs it at once when already cancelled.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Cancels and runs the handlers (first call only).
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler() }
    }
}
