import Dispatch

/// Where a load delivers its progress and completion callbacks.
///
/// The default, ``current``, calls back on the thread that finished the stage: synchronously inside `loadImage`
/// for memory hits (what makes a memory hit cost about a microsecond), else on an SDK queue. Keep such callbacks
/// short or name a queue: a slow callback on ``current`` holds an SDK worker.
public struct CallbackQueue: Sendable {
    enum Kind: Sendable {
        case current
        case dispatch(DispatchQueue)
    }

    let kind: Kind

    /// Call back on whichever thread finished the work (no hop). The documented default.
    public static let current = CallbackQueue(kind: .current)

    /// Call back asynchronously on `queue`.
    public static func dispatch(_ queue: DispatchQueue) -> CallbackQueue { CallbackQueue(kind: .dispatch(queue)) }

    /// Runs `work` on this queue.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        switch kind {
        case .current: work()
        case .dispatch(let queue): queue.async(execute: work)
        }
    }
}
