import Foundation

/// The cancellable handle of one prefetch batch: SDWebImage's `SDWebImagePrefetchToken`.
///
/// Thread-safe. Every URL of the batch gets exactly one per-URL report; the batch's reports arrive in order (1, 2,
/// 3 … of ``total``), never two at once, and its completion comes last (see ``ImagePrefetcher``).
public final class PrefetchToken: ImageOperation {
    /// What ending one URL did to the batch: the counts its report carries.
    struct Ended {
        let finished: Int
        let skipped: Int
        /// Every URL has now reported.
        let done: Bool
        /// The batch was cancelled (its progress and completion are no longer called).
        let cancelled: Bool
    }

    private struct State: Sendable {
        var cancelled = false
        var nextIndex = 0
        var reported: [Bool]
        var finished = 0
        var skipped = 0
        var operations: [Int: ImageLoadOperation] = [:]
    }

    /// The URLs of the batch, in the order they start.
    public let urls: [URL]
    /// Number of URLs in the batch.
    public var total: Int { urls.count }
    let progress: (@Sendable (Int, Int) -> Void)?
    let perURL: (@Sendable (PrefetchURLReport) -> Void)?
    let completed: (@Sendable (Int, Int) -> Void)?
    private let prefetcher: ImagePrefetcher
    // Mutated only while the prefetcher's lock is held too (always taken first), so the batch's counts and the
    // prefetcher's reports change together; the getters below take this lock alone.
    private let state: Locked<State>

    init(
        urls: [URL], prefetcher: ImagePrefetcher, progress: (@Sendable (Int, Int) -> Void)?,
        perURL: (@Sendable (PrefetchURLReport) -> Void)?, completed: (@Sendable (Int, Int) -> Void)?
    ) {
        self.urls = urls
        self.prefetcher = prefetcher
        self.progress = progress
        self.perURL = perURL
        self.completed = completed
        state = Locked(State(reported: Array(repeating: false, count: urls.count)))
    }

    /// True once cancelled.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }
    /// URLs ended so far: prefetched, failed or skipped (after a cancel, every URL of the batch).
    public var finishedCount: Int { state.withLock { $0.finished } }
    /// URLs ended without being prefetched so far (failed or skipped; SDWebImage's `skippedCount`).
    public var skippedCount: Int { state.withLock { $0.skipped } }

    /// Cancels the batch: queued URLs are dropped and running loads cancelled; every URL that has not reported
    /// yet reports ``PrefetchOutcome/skipped`` now, on this thread (unless another thread is delivering the
    /// prefetcher's reports, which then delivers them). The batch's progress and completion are not called again.
    public func cancel() { prefetcher.cancel(self) }

    // MARK: Bookkeeping (called with the prefetcher's lock held)

    /// The next URL to start, if the batch has one and was not cancelled.
    func takeNext() -> (index: Int, url: URL)? {
        state.withLock { state in
            guard !state.cancelled, state.nextIndex < urls.count else { return nil }
            defer { state.nextIndex += 1 }
            return (state.nextIndex, urls[state.nextIndex])
        }
    }

    /// True while URLs wait to start.
    var hasWaitingURLs: Bool { state.withLock { !$0.cancelled && $0.nextIndex < urls.count } }

    /// Records that URL `index` ended; nil when it had already reported (a load that ended after a cancel).
    func record(_ index: Int, outcome: PrefetchOutcome) -> Ended? {
        state.withLock { state in
            guard !state.reported[index] else { return nil }
            state.reported[index] = true
            state.operations[index] = nil
            state.finished += 1
            if outcome.isSkipped { state.skipped += 1 }
            return Ended(
                finished: state.finished, skipped: state.skipped, done: state.finished == urls.count,
                cancelled: state.cancelled)
        }
    }

    /// Marks the batch cancelled; returns the URLs that have not reported and the loads to cancel, or nil when
    /// it was cancelled before.
    func markCancelled() -> (unreported: [Int], operations: [ImageLoadOperation])? {
        state.withLock { state in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            let unreported = state.reported.indices.filter { !state.reported[$0] }
            defer { state.operations.removeAll() }
            return (unreported, Array(state.operations.values))
        }
    }

    // MARK: Load handles (called without the prefetcher's lock)

    /// Keeps the handle of URL `index`'s load so a cancel can stop it; cancels it at once when the batch was
    /// cancelled meanwhile.
    func track(_ operation: ImageLoadOperation, index: Int) {
        let cancelNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !state.reported[index], !operation.isFinished { state.operations[index] = operation }
            return false
        }
        if cancelNow { operation.cancel() }
    }
}
