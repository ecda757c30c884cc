import Dispatch
import Foundation
import Synchronization

/// What started a sweep (reported to the test seam, and in debug logs).
enum SweepTrigger: Sendable, Hashable {
    /// The first sweep of a new cache, which measures the directory.
    case startup
    /// The periodic timer.
    case timer
    /// A write took the known total over the limit, or enough bytes were written since the last sweep.
    case writes
    /// ``DiskCache/sweep()`` or ``DiskCache/removeExpired()``.
    case explicit
    /// After a migration.
    case migration
}

/// A source of periodic ticks for the sweep.
///
/// Threading: `start` is called once, from the cache's init; `stop` once, from its deinit; the handler may be
/// called from any thread and must return quickly (it only hands a sweep to the write pool).
protocol SweepTicking: Sendable {
    func start(_ handler: @escaping @Sendable () -> Void)
    func stop()
}

/// The periodic sweep's clock in production: a Dispatch timer on a private queue.
///
/// The source sits behind a `Mutex` (Dispatch sources are not `Sendable`); only `start` and `stop` touch it,
/// and neither runs user code.
final class SweepTimer: SweepTicking {
    private let source: Mutex<any DispatchSourceTimer>

    init(interval: TimeInterval) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "webimage.diskcache.timer"))
        let nanoseconds = Int(max(0.01, interval) * 1e9)
        timer.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10))
        source = Mutex(timer)
    }

    func start(_ handler: @escaping @Sendable () -> Void) {
        source.withLock { timer in
            timer.setEventHandler(handler: handler)
            timer.resume()
        }
    }

    func stop() { source.withLock { $0.cancel() } }
}
