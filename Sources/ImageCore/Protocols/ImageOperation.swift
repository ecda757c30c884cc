/// A running piece of work that can be cancelled: a load, a cache query, a download, a prefetch batch.
///
/// Thread-safe: `cancel()` may be called from any thread, any number of times; only the first call has effect.
/// Cancelling never calls the operation's completion synchronously under a lock the caller holds.
public protocol ImageOperation: AnyObject, Sendable {
    /// Requests cancellation. Idempotent.
    func cancel()
    /// True once `cancel()` was called.
    var isCancelled: Bool { get }
}
