import Foundation
import ImageCore

/// Every rule of one coalesced HTTP transfer, as a pure value: events in, actions out.
///
/// One transfer (one HTTP request, its redirect hops and its retries) serves any number of callers
/// ("subscribers"). The shell (``Transfer``) feeds events under its lock and performs the returned actions after
/// unlocking: sending a hop, failing or cancelling the HTTP task, scheduling a retry, delivering progress,
/// completing callers, giving the download slot back. The machine decides who is subscribed and completed, what a
/// late joiner is told, how progress is throttled, which redirect hop follows (``RedirectPolicy``), whether a
/// failure is retried (``HTTPRetryPolicy``), when the deadline or the minimum rate ends the transfer
/// (``TransferPace``), the size limits, and when the slot is free again. No I/O, no clock (time comes in as
/// `now`, nanoseconds), no closures, so the rules are tested on their own, in the style of AsyncHTTPClient's
/// connection-pool state machine.
///
/// Every way a transfer ends goes through one transition into ``State/finished`` that returns the only ``Ending``
/// the transfer ever produces: each caller is completed once, the outcome reported once and the slot released
/// once, by construction (a finished machine answers every later event with nothing, or with the slot release
/// its task still owed).
struct TransferStateMachine: Sendable {
    typealias SubscriberID = UInt64

    let rules: Rules
    // The state below is internal only so that the machine's extensions in other files (TransferStateMachine+…)
    // can change it; nothing outside the machine writes it.
    var state: State = .queued
    var subscribers: [Subscriber] = []
    /// Subscribers that joined in total (for the coalescing metric and event).
    var joinCount = 0
    /// The highest priority of the subscribers (kept when the last one leaves).
    var priority: DownloadPriority = .normal

    // The request
    let original: ImageRequest
    /// What the current hop sends.
    var hop: ImageRequest
    /// Set while the body of a redirect response is drained: the hop to send once it ended.
    var nextHop: ImageRequest?
    var redirectBodyBytes = 0
    var redirects = 0
    /// Every URL requested in this attempt (cycle detection), filled at the first redirect.
    var visited: Set<String> = []
    var attempt = 0
    /// The final response of this attempt after the configuration's modifier.
    var response: ResponseMetadata?

    // Time and the slot
    var pace: TransferPace?
    var startedAt: UInt64?
    /// Bytes received in all hops and attempts (the pace counts them).
    var wireBytes = 0
    /// The deadline or the redirect filter decided the running task must end with this error.
    var abortError: ImageError?
    /// A task was handed out (``Send``) and has not ended yet.
    var taskActive = false
    var slotHeld = false

    // Progress
    var receivedBytes = 0
    var expectedBytes: Int?
    var lastReportedBytes = 0
    var lastReportTime: UInt64 = 0
    var flushScheduled = false
    /// Subscribers with a progress callback.
    var listeners = 0
    /// Subscribers whose header check has not answered.
    var pendingHeaderChecks = 0

    init(request: ImageRequest, rules: Rules = Rules()) {
        self.rules = rules
        original = request
        hop = request
    }

    var isFinished: Bool { state == .finished }

    /// True when a subscriber has a progress callback (the shell reads the clock only then).
    var hasListeners: Bool { listeners > 0 }

    /// The subscriber `id`, if it still waits.
    func subscriber(_ id: SubscriberID) -> Subscriber? { subscribers.first { $0.id == id } }

    // MARK: Subscribers

    /// A caller wants this transfer's result.
    mutating func join(_ subscriber: Subscriber) -> JoinAction {
        guard state != .finished else { return .transferEnded }
        var subscriber = subscriber
        subscriber.personalResponse = nil
        subscribers.append(subscriber)
        joinCount += 1
        if subscriber.wantsProgress { listeners += 1 }
        if subscriber.awaitsHeaderCheck { pendingHeaderChecks += 1 }
        priority = subscribers.count == 1 ? subscriber.priority : max(priority, subscriber.priority)
        guard receivedBytes > 0, subscriber.wantsProgress else { return .joined(replay: nil) }
        return .joined(
            replay: ProgressReport(
                listeners: [Listener(id: subscriber.id, progressive: subscriber.progressive)], received: receivedBytes,
                expected: expectedBytes))
    }

    /// A caller leaves (it cancelled); the others keep the transfer. The last one out ends it with `cancelled`.
    mutating func leave(_ id: SubscriberID) -> LeaveAction {
        guard state != .finished, remove(id) != nil else { return .none }
        guard subscribers.isEmpty else { return .completeSubscriber }
        return .completeSubscriberAndEnd(end(.failure(.cancelled(stage: .download)), cancelsTask: true))
    }

    /// Caller `id` asks for `priority`; returns true when the transfer's priority changed.
    mutating func setPriority(_ id: SubscriberID, _ priority: DownloadPriority) -> Bool {
        guard state != .finished, let index = subscribers.firstIndex(where: { $0.id == id }) else { return false }
        subscribers[index].priority = priority
        return updatePriority()
    }

    private mutating func remove(_ id: SubscriberID) -> Subscriber? {
        guard let index = subscribers.firstIndex(where: { $0.id == id }) else { return nil }
        let gone = subscribers.remove(at: index)
        if gone.wantsProgress { listeners -= 1 }
        if gone.awaitsHeaderCheck { pendingHeaderChecks -= 1 }
        _ = updatePriority()
        return gone
    }

    private mutating func updatePriority() -> Bool {
        guard let highest = subscribers.lazy.map(\.priority).max(), highest != priority else { return false }
        priority = highest
        return true
    }

    // MARK: Sending

    /// The loader's queue gave this transfer a slot at `now`.
    mutating func slotGranted(now: UInt64) -> StartAction {
        guard state == .queued, !subscribers.isEmpty else { return .releaseSlot }
        slotHeld = true
        state = .running(headReceived: false)
        attempt = 1
        startedAt = now
        let pace = TransferPace(startedAt: now, timeout: rules.timeout, rate: rules.minimumRate)
        self.pace = pace
        taskActive = true
        return .send(
            Send(request: hop, attempt: 1, isRedirect: false), watchEvery: pace.isWatched ? pace.checkInterval : nil)
    }

    /// The shell created the HTTP task of the last ``Send``.
    func taskStarted() -> TaskAction {
        if state == .finished { return .cancel }
        if let abortError { return .fail(abortError) }
        return .none
    }

    /// A response head with `status` (and `location`) arrived for the current hop.
    mutating func headReceived(status: Int, location: String?) -> HeadAction {
        if let abortError { return .refuse(abortError) }
        guard state != .finished else { return .refuse(.cancelled(stage: .download)) }
        guard rules.followsRedirects, RedirectPolicy.isRedirect(status) else { return .final }
        switch RedirectPolicy.decide(
            after: hop, status: status, location: location, redirects: redirects,
            visited: visited.isEmpty ? [original.url.absoluteString] : visited, maximum: rules.maximumRedirects)
        {
        case .final: return .final
        case .fail(let error): return .refuse(error)
        case .follow(let next): return .redirect(next)
        }
    }

    /// The redirect filter let `next` pass: its body is drained, then `next` is sent.
    mutating func followRedirect(to next: ImageRequest) {
        guard state != .finished else { return }
        nextHop = next
        redirectBodyBytes = 0
    }

    /// A redirect hop the client followed itself was refused (a client given by the user follows redirects): the
    /// task must end with `error`. Returns the error to fail it with.
    mutating func abort(with error: ImageError) -> ImageError {
        if abortError == nil { abortError = error }
        return abortError ?? error
    }

    /// The final response head arrived: `response` after the configuration's modifier, `wireLength` its
    /// Content-Length, `sharedError` why the response is unusable for subscribers without a modifier of their
    /// own (nil: usable), `verdicts` what each subscriber's own modifier made of it (checked like any response).
    mutating func responseArrived(
        _ response: ResponseMetadata, wireLength: Int?, sharedError: ImageError?,
        verdicts: [SubscriberID: Result<ResponseMetadata, ImageError>]
    ) -> Verdict {
        guard case .running = state else { return Verdict() }
        if let wireLength, wireLength > rules.maximumResponseSize {
            return Verdict(
                refusal: Self.tooLarge("Content-Length \(wireLength)", limit: rules.maximumResponseSize)
                    .attaching(response: response))
        }
        var failing: [SubscriberID: ImageError] = [:]
        var accepting = false
        for subscriber in subscribers where subscriber.modifiesResponse {
            switch verdicts[subscriber.id] {
            case .failure(let error)?: failing[subscriber.id] = error
            case .success?: accepting = true
            case nil: continue  // joined after the head was judged: judged at the end
            }
        }
        if let sharedError, accepting {
            // Callers with a modifier of their own continue; the others cannot use the response.
            for subscriber in subscribers where !subscriber.modifiesResponse { failing[subscriber.id] = sharedError }
        }
        var verdict = Verdict()
        verdict.failed = failing.compactMap { id, error in remove(id).map { ($0, error) } }
        if subscribers.isEmpty {
            // Nobody can use it: the transfer ends here with the first refusal.
            let error = verdict.failed.first?.1 ?? sharedError ?? Self.refusedByModifier()
            verdict.refusal = error
            verdict.ending = end(.failure(error), cancelsTask: false)
            return verdict
        }
        if let sharedError, !accepting {
            // Those left get it when the task ends, so a retry policy still sees a 5xx.
            verdict.refusal = sharedError
            return verdict
        }
        for (id, result) in verdicts {
            if case .success(let personal) = result, let index = subscribers.firstIndex(where: { $0.id == id }) {
                subscribers[index].personalResponse = personal
            }
        }
        self.response = response
        state = .running(headReceived: true)
        expectedBytes = wireLength
        return verdict
    }

    /// Header checks answered: `accepted` need no more bytes, `rejected` fail alone with their errors; when no
    /// subscriber is left the transfer ends with the first rejection.
    mutating func headerChecksAnswered(accepted: [SubscriberID], rejected: [SubscriberID: ImageError]) -> Verdict {
        guard state != .finished else { return Verdict() }
        for id in accepted {
            if let index = subscribers.firstIndex(where: { $0.id == id }), subscribers[index].awaitsHeaderCheck {
                subscribers[index].awaitsHeaderCheck = false
                pendingHeaderChecks -= 1
            }
        }
        var verdict = Verdict()
        verdict.failed = rejected.compactMap { id, error in remove(id).map { ($0, error) } }
        if subscribers.isEmpty, let error = verdict.failed.first?.1 {
            verdict.refusal = error
            verdict.ending = end(.failure(error), cancelsTask: false)
        }
        return verdict
    }

    /// `count` body bytes arrived at `now`: count them against the limits, report progress now or later.
    mutating func bodyReceived(_ count: Int, now: UInt64) -> BodyAction {
        guard case .running = state else { return .discard }
        guard count > 0 else { return .keep }
        wireBytes += count
        if nextHop != nil {
            redirectBodyBytes += count
            guard redirectBodyBytes <= rules.maximumRedirectBody else {
                return .refuse(Self.tooLarge("redirect body", limit: rules.maximumRedirectBody))
            }
            return .discard
        }
        guard receivedBytes + count <= rules.maximumResponseSize else {
            return .refuse(
                Self.tooLarge("more than \(rules.maximumResponseSize) bytes streamed", limit: rules.maximumResponseSize)
                    .attaching(response: response))
        }
        let first = receivedBytes == 0
        receivedBytes += count
        guard listeners > 0 else { return .keep }
        let elapsed = now &- lastReportTime
        let due =
            first || receivedBytes - lastReportedBytes >= rules.progressByteInterval
            || elapsed >= rules.progressTimeInterval || receivedBytes == expectedBytes
        if due { return .keepAndReport(makeReport(now: now)) }
        guard !flushScheduled else { return .keep }
        flushScheduled = true
        return .keepAndFlushLater(afterNanoseconds: rules.progressTimeInterval - elapsed)
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
        return ProgressReport(listeners: currentListeners, received: receivedBytes, expected: expectedBytes)
    }

    var currentListeners: [Listener] {
        subscribers.lazy.filter(\.wantsProgress).map { Listener(id: $0.id, progressive: $0.progressive) }
    }
}
