import Dispatch
import Foundation
import Synchronization

/// Warms the cache with a list of URLs, a few at a time, at low priority: SDWebImage's `SDWebImagePrefetcher`.
///
/// At most ``maxConcurrentPrefetchCount`` loads run at once across every batch of this prefetcher; each
/// ``prefetch(_:progress:perURL:completed:)`` call is its own batch with its own token, and a new batch never
/// cancels an earlier one (unlike SDWebImage's prefetcher). URLs start in the order they were given, batch after
/// batch. Loads start on the prefetcher's own queue, never inside `prefetch`, so a batch cancelled as soon as
/// `prefetch` returns sends no request.
///
/// Reports: every URL of a batch gets exactly one per-URL report (``PrefetchURLReport``: finished, failed or
/// skipped, see ``PrefetchOutcome``), then the batch's progress; the ``delegate`` hears about every URL and about
/// the prefetcher going idle. As in SDWebImage (`callProgressBlockForToken:` and `callCompletionBlockForToken:`),
/// the delegate hears first: for each URL, whatever its outcome, the delegate's
/// ``ImagePrefetcherDelegate/imagePrefetcher(_:didPrefetch:)``, then the batch's per-URL handler, then its
/// progress; when the last running batch ends, the delegate's
/// ``ImagePrefetcherDelegate/imagePrefetcher(_:didFinishWithTotalCount:skippedCount:)``, then that batch's
/// completion. All of a prefetcher's reports go through one queue that one thread at a time drains (the thread
/// that ended a load, or the one that cancelled a batch), so they never overlap and arrive in the order the URLs
/// ended: a batch's counts go 1, 2, 3 … and its completion comes after every report of its URLs.
///
/// Thread-safe.
public final class ImagePrefetcher: Sendable {
    private enum Report: Sendable {
        case url(
            PrefetchToken, PrefetchURLReport, session: PrefetchURLReport, progress: Bool,
            delegate: (any ImagePrefetcherDelegate)?)
        case batchCompleted(PrefetchToken, finished: Int, skipped: Int)
        case idle(any ImagePrefetcherDelegate, total: Int, skipped: Int)
    }

    private struct State {
        var maxConcurrent: Int
        var running = 0
        var options: ImageOptions = [.lowPriority]
        var context: ImageContext?
        weak var delegate: (any ImagePrefetcherDelegate)?
        /// Batches with URLs not started yet, oldest first.
        var waiting: [PrefetchToken] = []
        /// Batches neither ended nor cancelled (SDWebImage's running tokens).
        var runningTokens: [ObjectIdentifier: PrefetchToken] = [:]
        /// Counts since the prefetcher was last idle, for the delegate.
        var sessionTotal = 0
        var sessionFinished = 0
        var sessionSkipped = 0
        var reports = FIFOQueue<Report>()
        var draining = false
    }

    /// A prefetcher over ``ImageManager/shared``.
    public static let shared = ImagePrefetcher()

    /// The manager that loads.
    public let manager: ImageManager
    private let state: Mutex<State>
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
        state = Mutex(State(maxConcurrent: max(1, maxConcurrentPrefetchCount)))
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

    /// Hears about every URL of every batch and about the prefetcher going idle; held weakly.
    public var delegate: (any ImagePrefetcherDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Batches that have neither ended nor been cancelled (SDWebImage's running tokens).
    public var runningTokenCount: Int { state.withLock { $0.runningTokens.count } }

    /// Prefetches `urls` as one batch.
    ///
    /// - Parameters:
    ///   - urls: the URLs, started in this order.
    ///   - progress: after each URL ends: (finished, total); finished counts every URL that ended. Not called
    ///     after the batch was cancelled.
    ///   - perURL: once for every URL of the batch, with its outcome and the batch's counts — after a cancel too
    ///     (the URLs that had not reported then report ``PrefetchOutcome/skipped``).
    ///   - completed: once every URL ended: (finished, skipped), where skipped counts the URLs not prefetched
    ///     (failed or cancelled, SDWebImage's `skippedCount`). Not called for a cancelled batch. Called before this
    ///     method returns for an empty list.
    /// - Returns: the batch's token; cancelling it drops its queued URLs and cancels its running loads.
    @discardableResult
    public func prefetch(
        _ urls: [URL], progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)? = nil,
        perURL: (@Sendable (PrefetchURLReport) -> Void)? = nil,
        completed: (@Sendable (_ finished: Int, _ skipped: Int) -> Void)? = nil
    ) -> PrefetchToken {
        let token = PrefetchToken(
            urls: urls, prefetcher: self, progress: progress, perURL: perURL, completed: completed)
        if urls.isEmpty {
            completed?(0, 0)
            return token
        }
        state.withLock { state in
            state.runningTokens[ObjectIdentifier(token)] = token
            state.waiting.append(token)
            state.sessionTotal += urls.count
        }
        startQueue.async { self.pump() }
        return token
    }

    /// Cancels every running batch (each as ``PrefetchToken/cancel()`` does).
    public func cancelAll() {
        for token in state.withLock({ Array($0.runningTokens.values) }) { token.cancel() }
    }

    // MARK: Loads

    private func pump() {
        while let (token, index, url, options, context) = nextLoad() {
            let operation = manager.loadImage(with: url, options: options, context: context) { result in
                if case .success(let value) = result, !value.isFinal { return }
                self.ended(token, index: index, result: result)
            }
            token.track(operation, index: index)
        }
    }

    private func nextLoad() -> (PrefetchToken, Int, URL, ImageOptions, ImageContext?)? {
        state.withLock { state in
            guard state.running < state.maxConcurrent else { return nil }
            while let batch = state.waiting.first {
                guard let (index, url) = batch.takeNext() else {
                    state.waiting.removeFirst()
                    continue
                }
                if !batch.hasWaitingURLs { state.waiting.removeFirst() }
                state.running += 1
                return (batch, index, url, state.options.union(.lowPriority), state.context)
            }
            return nil
        }
    }

    private func ended(_ token: PrefetchToken, index: Int, result: Result<ImageResult, ImageError>) {
        let outcome: PrefetchOutcome
        switch result {
        case .success(let value): outcome = .finished(value)
        case .failure(let error): outcome = error.isCancellation ? .skipped : .failed(error)
        }
        let drains = state.withLock { state -> Bool in
            state.running -= 1
            Self.record(token, index: index, outcome: outcome, in: &state)
            return Self.claimDrain(&state)
        }
        if drains { drain() }
        startQueue.async { self.pump() }
    }

    /// Cancels `token`'s batch: see ``PrefetchToken/cancel()``.
    func cancel(_ token: PrefetchToken) {
        let (operations, drains) = state.withLock { state -> ([ImageLoadOperation], Bool) in
            guard let (unreported, operations) = token.markCancelled() else { return ([], false) }
            state.waiting.removeAll { $0 === token }
            for index in unreported { Self.record(token, index: index, outcome: .skipped, in: &state) }
            return (operations, Self.claimDrain(&state))
        }
        for operation in operations { operation.cancel() }
        if drains { drain() }
    }

    // MARK: Reports

    /// Records URL `index`'s end in the batch and the session, and queues its reports (and the batch's
    /// completion, and the idle report, when they follow). Ignores a URL that already reported.
    private static func record(
        _ token: PrefetchToken, index: Int, outcome: PrefetchOutcome, in state: inout State
    ) {
        guard let ended = token.record(index, outcome: outcome) else { return }
        state.sessionFinished += 1
        if outcome.isSkipped { state.sessionSkipped += 1 }
        let url = token.urls[index]
        let batch = PrefetchURLReport(
            url: url, outcome: outcome, finishedCount: ended.finished, skippedCount: ended.skipped,
            totalCount: token.total)
        let session = PrefetchURLReport(
            url: url, outcome: outcome, finishedCount: state.sessionFinished, skippedCount: state.sessionSkipped,
            totalCount: state.sessionTotal)
        state.reports.append(
            .url(token, batch, session: session, progress: !ended.cancelled, delegate: state.delegate))
        guard ended.done else { return }
        state.runningTokens[ObjectIdentifier(token)] = nil
        if state.runningTokens.isEmpty {
            // The delegate hears that the prefetcher is idle before the batch's own completion (SDWebImage's order).
            if let delegate = state.delegate {
                state.reports.append(.idle(delegate, total: state.sessionTotal, skipped: state.sessionSkipped))
            }
            state.sessionTotal = 0
            state.sessionFinished = 0
            state.sessionSkipped = 0
        }
        if !ended.cancelled {
            state.reports.append(.batchCompleted(token, finished: ended.finished, skipped: ended.skipped))
        }
    }

    /// True when the caller must drain: reports wait and no other thread is draining.
    private static func claimDrain(_ state: inout State) -> Bool {
        guard !state.draining, !state.reports.isEmpty else { return false }
        state.draining = true
        return true
    }

    /// Delivers queued reports, one at a time and outside the lock, until none is left.
    private func drain() {
        while let report = state.withLock({ state -> Report? in
            guard let next = state.reports.popFirst() else {
                state.draining = false
                return nil
            }
            return next
        }) {
            deliver(report)
        }
    }

    private func deliver(_ report: Report) {
        switch report {
        case .url(let token, let batch, let session, let progress, let delegate):
            // SDWebImage's order: the delegate, then the batch's own callbacks.
            delegate?.imagePrefetcher(self, didPrefetch: session)
            token.perURL?(batch)
            if progress { token.progress?(batch.finishedCount, batch.totalCount) }
        case .batchCompleted(let token, let finished, let skipped):
            token.completed?(finished, skipped)
        case .idle(let delegate, let total, let skipped):
            delegate.imagePrefetcher(self, didFinishWithTotalCount: total, skippedCount: skipped)
        }
    }
}
