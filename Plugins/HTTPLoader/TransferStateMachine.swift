/// The per-transfer subscriber logic of coalesced downloads, as a pure value: events in, actions out.
///
/// One transfer (one HTTP request) serves any number of callers ("subscribers"). The shell (``Transfer``) feeds
/// it events under its lock and performs the returned actions after unlocking: starting or cancelling the HTTP
/// task, delivering progress, completing callers. No I/O, no clocks (time comes in as `now`), no closures, so the
/// rules — who is completed, when the transfer dies, what a late joiner is told — are tested on their own, in
/// the style of AsyncHTTPClient's connection-pool state machine.
struct TransferStateMachine: Sendable {
    typealias SubscriberID = UInt64

    enum State: Sendable, Equatable {
        /// Waiting for a slot in the loader's queue.
        case queued
        /// The HTTP request runs; `headReceived` once the final response head arrived.
        case running(headReceived: Bool)
        /// Completed, failed or abandoned: no subscriber is left and no event has an effect.
        case finished
    }

    struct Subscriber: Sendable, Equatable {
        let id: SubscriberID
        /// Wants `partialData` with its progress (``ImageOptions/progressiveLoad``).
        let progressive: Bool
        /// Has a progress callback; when no subscriber has one, no progress work is done at all.
        var wantsProgress = true
    }

    /// A progress report for some subscribers.
    struct ProgressReport: Sendable, Equatable {
        var subscribers: [Subscriber]
        var received: Int
        var expected: Int?
    }

    enum JoinAction: Sendable, Equatable {
        /// Joined; deliver `replay` (bytes already received) to the new subscriber first, if any.
        case joined(replay: ProgressReport?)
        /// The transfer already ended; the caller must start a new one.
        case transferEnded
    }

    enum LeaveAction: Sendable, Equatable {
        /// Unknown or already completed subscriber: nothing to do (completion is never delivered twice).
        case none
        /// Complete only this subscriber.
        case completeSubscriber
        /// Complete this subscriber and cancel the transfer: it was the last one. `wasQueued` says whether the
        /// transfer still sat in the loader's queue (remove it there) or was running (cancel the HTTP task).
        case completeSubscriberAndCancelTransfer(wasQueued: Bool)
    }

    enum StartAction: Sendable, Equatable {
        /// Send the request.
        case execute
        /// Everyone left before the slot came: release the slot without sending anything.
        case releaseSlot
    }

    /// Minimum bytes between two progress reports.
    let progressByteInterval: Int
    /// Minimum nanoseconds between two progress reports.
    let progressTimeInterval: UInt64

    private(set) var state: State = .queued
    private(set) var subscribers: [Subscriber] = []
    private(set) var receivedBytes = 0
    private(set) var expectedBytes: Int?
    private var lastReportedBytes = 0
    private var lastReportTime: UInt64 = 0
    private var flushScheduled = false
    /// Subscribers that joined in total (for the coalescing metric and event).
    private(set) var joinCount = 0
    /// Subscribers with a progress callback.
    private var listeners = 0

    init(progressByteInterval: Int = 64 * 1024, progressTimeInterval: UInt64 = 50_000_000) {
        self.progressByteInterval = progressByteInterval
        self.progressTimeInterval = progressTimeInterval
    }

    var isFinished: Bool { state == .finished }

    /// True when a subscriber has a progress callback (the shell reads the clock only then).
    var hasListeners: Bool { listeners > 0 }

    /// A caller wants this transfer's result.
    mutating func join(_ id: SubscriberID, progressive: Bool, wantsProgress: Bool = true) -> JoinAction {
        guard state != .finished else { return .transferEnded }
        let subscriber = Subscriber(id: id, progressive: progressive, wantsProgress: wantsProgress)
        subscribers.append(subscriber)
        joinCount += 1
        if wantsProgress { listeners += 1 }
        guard receivedBytes > 0, wantsProgress else { return .joined(replay: nil) }
        return .joined(
            replay: ProgressReport(subscribers: [subscriber], received: receivedBytes, expected: expectedBytes))
    }

    /// A caller leaves (cancelled, or refused by its own response modifier); the others keep the transfer.
    mutating func leave(_ id: SubscriberID) -> LeaveAction {
        guard state != .finished, let index = subscribers.firstIndex(where: { $0.id == id }) else { return .none }
        if subscribers.remove(at: index).wantsProgress { listeners -= 1 }
        guard subscribers.isEmpty else { return .completeSubscriber }
        let wasQueued = state == .queued
        state = .finished
        return .completeSubscriberAndCancelTransfer(wasQueued: wasQueued)
    }

    /// The loader's queue gave this transfer a slot.
    mutating func slotGranted() -> StartAction {
        guard state == .queued, !subscribers.isEmpty else { return .releaseSlot }
        state = .running(headReceived: false)
        return .execute
    }

    /// A retry starts over: bytes counted so far are dropped (retries happen only before body bytes arrive).
    mutating func restart() {
        guard case .running = state else { return }
        state = .running(headReceived: false)
        receivedBytes = 0
        expectedBytes = nil
        lastReportedBytes = 0
    }

    /// The final response head arrived with `expected` bytes announced (Content-Length).
    mutating func headReceived(expected: Int?) {
        guard case .running = state else { return }
        state = .running(headReceived: true)
        expectedBytes = expected
    }

    enum BodyAction: Sendable, Equatable {
        case none
        /// Deliver this report now.
        case report(ProgressReport)
        /// A report was held back: call ``flush(now:)`` after this many nanoseconds, so a stream that pauses
        /// never leaves callers with a stale count.
        case scheduleFlush(afterNanoseconds: UInt64)
    }

    /// `count` body bytes arrived at time `now` (nanoseconds): report now, or hold back and maybe schedule a flush.
    mutating func bodyReceived(_ count: Int, now: UInt64) -> BodyAction {
        guard case .running = state, count > 0 else { return .none }
        let first = receivedBytes == 0
        receivedBytes += count
        guard listeners > 0 else { return .none }
        let elapsed = now &- lastReportTime
        let due =
            first || receivedBytes - lastReportedBytes >= progressByteInterval || elapsed >= progressTimeInterval
            || receivedBytes == expectedBytes
        if due { return .report(makeReport(now: now)) }
        guard !flushScheduled else { return .none }
        flushScheduled = true
        return .scheduleFlush(afterNanoseconds: progressTimeInterval - elapsed)
    }

    /// The flush timer fired: report the bytes held back, if any.
    mutating func flush(now: UInt64) -> ProgressReport? {
        flushScheduled = false
        guard case .running = state, receivedBytes != lastReportedBytes, listeners > 0 else { return nil }
        return makeReport(now: now)
    }

    private mutating func makeReport(now: UInt64) -> ProgressReport {
        lastReportedBytes = receivedBytes
        lastReportTime = now
        return ProgressReport(subscribers: subscribers, received: receivedBytes, expected: expectedBytes)
    }

    /// The transfer ended (success or failure): every remaining subscriber is completed, plus a last progress
    /// report when the final byte count was not reported yet (success only).
    mutating func finish(succeeded: Bool) -> (complete: [Subscriber], finalReport: ProgressReport?) {
        guard state != .finished else { return ([], nil) }
        state = .finished
        let remaining = subscribers
        subscribers = []
        let listening = listeners > 0
        listeners = 0
        var report: ProgressReport?
        if succeeded, receivedBytes != lastReportedBytes, listening {
            report = ProgressReport(subscribers: remaining, received: receivedBytes, expected: expectedBytes)
        }
        return (remaining, report)
    }
}
