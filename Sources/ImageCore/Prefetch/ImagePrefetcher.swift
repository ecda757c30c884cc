import Dispatch
import Foundation

/// Warms the cache with a list of URLs, a few at a time, at low priority.
///
/// At most ``maxConcurrentPrefetchCount`` loads run at once across every batch of this prefetcher; each
/// ``prefetch(_:progress:completed:)`` call is its own batch with its own token, and a new batch never cancels an
/// earlier one (unlike SDWebImage's prefetcher). Loads start on the prefetcher's own queue, never inside
/// `prefetch`, so a batch cancelled as soon as `prefetch` returns sends no request. Thread-safe; callbacks run on
/// the thread that finished a load.
public final class ImagePrefetcher: Sendable {
    private struct Pending: Sendable {
        let batch: PrefetchToken
        let url: URL
    }

    private struct State: Sendable {
        var maxConcurrent: Int
        var running = 0
        var queue: [Pending] = []
        var options: ImageOptions = [.lowPriority]
        var context: ImageContext?
    }

    /// A prefetcher over ``ImageManager/shared``.
    public static let shared = ImagePrefetcher()

    /// The manager that loads.
    public let manager: ImageManager
    private let state: Locked<State>
    /// Where loads start (serial).
    let startQueue: DispatchQueue

    /// Creates a prefetcher.
    public convenience init(manager: ImageManager = .shared, maxConcurrentPrefetchCount: Int = 3) {
        self.init(
            manager: manager, maxConcurrentPrefetchCount: maxConcurrentPrefetchCount,
            startQueue: DispatchQueue(label: "webimage.prefetcher"))
    }

    init(manager: ImageManager, maxConcurrentPrefetchCount: Int, startQueue: DispatchQueue) {
        self.manager = manager
        self.startQueue = startQueue
        state = Locked(State(maxConcurrent: max(1, maxConcurrentPrefetchCount)))
    }

    /// The most loads in flight at once (default 3).
    public var maxConcurrentPrefetchCount: Int {
        get { state.withLock { $0.maxConcurrent } }
        set {
            state.withLock { $0.maxConcurrent = max(1, newValue) }
            startQueue.async { self.pump() }
        }
    }

    /// Options of every prefetch load (default `.lowPriority`; `.lowPriority` is always added).
    public var options: ImageOptions {
        get { state.withLock { $0.options } }
        set { state.withLock { $0.options = newValue } }
    }

    /// Context of every prefetch load.
    public var context: ImageContext? {
        get { state.withLock { $0.context } }
        set { state.withLock { $0.context = newValue } }
    }

    /// Prefetches `urls` as one batch.
    ///
    /// - Parameters:
    ///   - progress: after each URL ends: (finished, total); finished counts successes and failures.
    ///   - completed: once every URL ended: (finished, skipped) where skipped counts failures. Not called for a
    ///     cancelled batch.
    /// - Returns: the batch's token; cancelling it drops its queued URLs and cancels its running loads.
    @discardableResult
    public func prefetch(
        _ urls: [URL], progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)? = nil,
        completed: (@Sendable (_ finished: Int, _ skipped: Int) -> Void)? = nil
    ) -> PrefetchToken {
        let token = PrefetchToken(total: urls.count, progress: progress, completed: completed)
        if urls.isEmpty {
            completed?(0, 0)
            return token
        }
        state.withLock { state in state.queue += urls.map { Pending(batch: token, url: $0) } }
        startQueue.async { self.pump() }
        return token
    }

    /// Cancels every batch.
    public func cancelAll() {
        let batches = state.withLock { state -> [PrefetchToken] in
            defer { state.queue.removeAll() }
            return state.queue.map(\.batch)
        }
        for batch in batches { batch.cancel() }
    }

    private func pump() {
        while true {
            let next = state.withLock { state -> (Pending, ImageOptions, ImageContext?)? in
                state.queue.removeAll { $0.batch.isCancelled }
                guard state.running < state.maxConcurrent, !state.queue.isEmpty else { return nil }
                state.running += 1
                return (state.queue.removeFirst(), state.options.union(.lowPriority), state.context)
            }
            guard let (pending, options, context) = next else { return }
            let operation = manager.loadImage(with: pending.url, options: options, context: context) { result in
                if case .success(let value) = result, !value.isFinal { return }
                pending.batch.record(success: (try? result.get()) != nil)
                self.state.withLock { $0.running -= 1 }
                self.startQueue.async { self.pump() }
            }
            pending.batch.track(operation)
        }
    }
}

/// The cancellable handle of one prefetch batch.
///
/// Progress reports arrive in order (1, 2, 3 … of `total`), never two at once, and the completion comes last:
/// reports go through one queue drained by one thread at a time.
public final class PrefetchToken: ImageOperation {
    private struct Report: Sendable {
        let finished: Int
        let skipped: Int
        let done: Bool
    }

    private struct State: Sendable {
        var cancelled = false
        var finished = 0
        var skipped = 0
        var operations: [ObjectIdentifier: ImageLoadOperation] = [:]
        var pending: [Report] = []
        var draining = false
    }

    /// Number of URLs in the batch.
    public let total: Int
    private let progress: (@Sendable (Int, Int) -> Void)?
    private let completed: (@Sendable (Int, Int) -> Void)?
    private let state = Locked(State())

    init(total: Int, progress: (@Sendable (Int, Int) -> Void)?, completed: (@Sendable (Int, Int) -> Void)?) {
        self.total = total
        self.progress = progress
        self.completed = completed
    }

    /// True once cancelled.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }
    /// URLs ended so far (successes and failures).
    public var finishedCount: Int { state.withLock { $0.finished } }
    /// URLs that failed so far.
    public var skippedCount: Int { state.withLock { $0.skipped } }

    /// Cancels the batch: queued URLs are dropped, running loads cancelled.
    public func cancel() {
        let operations = state.withLock { state -> [ImageLoadOperation] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.operations.removeAll() }
            return Array(state.operations.values)
        }
        for operation in operations { operation.cancel() }
    }

    func track(_ operation: ImageLoadOperation) {
        let cancelNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !operation.isFinished { state.operations[ObjectIdentifier(operation)] = operation }
            return false
        }
        if cancelNow { operation.cancel() }
    }

    func record(success: Bool) {
        let first = state.withLock { state -> Report? in
            guard !state.cancelled else { return nil }
            state.finished += 1
            if !success { state.skipped += 1 }
            // Forget loads that ended, so a long batch holds only its running handles.
            state.operations = state.operations.filter { !$0.value.isFinished }
            let report = Report(finished: state.finished, skipped: state.skipped, done: state.finished == total)
            guard !state.draining else {
                state.pending.append(report)
                return nil
            }
            state.draining = true
            return report
        }
        var next = first
        while let report = next {
            progress?(report.finished, total)
            if report.done { completed?(report.finished, report.skipped) }
            next = state.withLock { state -> Report? in
                guard !state.pending.isEmpty else {
                    state.draining = false
                    return nil
                }
                return state.pending.removeFirst()
            }
        }
    }
}
