import Foundation
import ImageCore
import Testing

@testable import HTTPLoader

/// The transfer's rules on their own: no I/O, no clock.
@Suite struct TransferStateMachineTests {
    typealias Machine = TransferStateMachine

    static let url = URL(string: "http://origin.test/a.png")!

    static func machine(_ configure: (inout Machine.Rules) -> Void = { _ in }) -> Machine {
        var rules = Machine.Rules()
        configure(&rules)
        return Machine(request: ImageRequest(url: url), rules: rules)
    }

    static func subscriber(
        _ id: UInt64, progressive: Bool = false, priority: DownloadPriority = .normal, modifies: Bool = false,
        checks: Bool = false
    ) -> Machine.Subscriber {
        Machine.Subscriber(
            id: id, progressive: progressive, priority: priority, modifiesResponse: modifies,
            awaitsHeaderCheck: checks)
    }

    static func response(_ status: Int = 200, length: Int? = nil) -> ResponseMetadata {
        ResponseMetadata(url: url, statusCode: status, expectedContentLength: length)
    }

    /// Joins `ids`, grants the slot and returns the send.
    static func running(_ machine: inout Machine, _ ids: [UInt64] = [1]) -> Machine.Send? {
        for id in ids { _ = machine.join(subscriber(id)) }
        guard case .send(let send, _) = machine.slotGranted(now: 0) else { return nil }
        return send
    }

    /// A final 200 head with `length` bytes announced, accepted by everyone.
    static func accept(_ machine: inout Machine, length: Int? = nil) {
        _ = machine.headReceived(status: 200, location: nil)
        _ = machine.responseArrived(response(length: length), wireLength: length, sharedError: nil, verdicts: [:])
    }

    // MARK: Subscribers

    @Test func firstJoinHasNoReplayAndTheSlotSendsTheRequest() throws {
        var machine = Self.machine()
        #expect(machine.join(Self.subscriber(1)) == .joined(replay: nil))
        #expect(machine.state == .queued)
        guard case .send(let send, let watch) = machine.slotGranted(now: 5) else {
            Issue.record("no send")
            return
        }
        #expect(send.request.url == Self.url && send.attempt == 1 && !send.isRedirect)
        #expect(watch == nil)  // no deadline, no rate
        #expect(machine.state == .running(headReceived: false))
        // A second grant (a bug in the queue) must not send again.
        guard case .releaseSlot = machine.slotGranted(now: 6) else {
            Issue.record("granted twice")
            return
        }
    }

    @Test func cancellingOneOfSeveralCompletesOnlyThatOne() throws {
        var machine = Self.machine()
        _ = try #require(Self.running(&machine, [1, 2, 3]))
        guard case .completeSubscriber = machine.leave(2) else { return miss("not a plain leave") }
        #expect(machine.subscribers.map(\.id) == [1, 3])
        // Leaving twice or an unknown ID does nothing (no double completion).
        guard case .none = machine.leave(2), case .none = machine.leave(99) else { return miss("left twice") }
        Self.accept(&machine)
        guard case .end(let ending) = machine.hopSucceeded() else { return miss("no ending") }
        #expect(ending.complete.map(\.id) == [1, 3])
    }

    @Test func theLastLeaverEndsTheTransferAndItsTaskOwesTheSlot() throws {
        var machine = Self.machine()
        _ = try #require(Self.running(&machine, [1, 2]))
        _ = machine.leave(1)
        guard case .completeSubscriberAndEnd(let ending) = machine.leave(2) else { return miss("not ended") }
        #expect(ending.result.error?.code == .cancelled)
        #expect(ending.cancelsTask && !ending.releasesSlot && !ending.leavesQueue)
        #expect(machine.isFinished)
        // Nobody can join a dying transfer; the cancelled task's end frees the slot, once.
        #expect(machine.join(Self.subscriber(3)) == .transferEnded)
        guard case .releaseSlot = machine.hopFailed(.cancelled(stage: .download)) else { return miss("slot") }
        guard case .none = machine.hopFailed(.cancelled(stage: .download)) else { return miss("released twice") }
    }

    @Test func theLastLeaverOfAQueuedTransferTakesItOutOfTheQueue() {
        var machine = Self.machine()
        _ = machine.join(Self.subscriber(1))
        guard case .completeSubscriberAndEnd(let ending) = machine.leave(1) else { return miss("not ended") }
        #expect(ending.leavesQueue && !ending.releasesSlot && !ending.cancelsTask && ending.startedAt == nil)
        // Granted in the race with the removal: the slot goes straight back.
        guard case .releaseSlot = machine.slotGranted(now: 0) else { return miss("sent") }
    }

    @Test func theTransferRunsAtItsCallersHighestPriority() {
        var machine = Self.machine()
        _ = machine.join(Self.subscriber(1, priority: .low))
        #expect(machine.priority == .low)
        _ = machine.join(Self.subscriber(2, priority: .normal))
        #expect(machine.priority == .normal)
        #expect(machine.setPriority(1, .high) == true)
        #expect(machine.priority == .high)
        #expect(machine.setPriority(2, .low) == false)  // still high through 1
        _ = machine.leave(1)
        #expect(machine.priority == .low)
        #expect(machine.setPriority(99, .high) == false)
    }

    // MARK: Progress

    @Test func aLateJoinerGetsAReplayOfEveryByteSoFar() throws {
        var machine = Self.machine {
            $0.progressByteInterval = 1 << 30
            $0.progressTimeInterval = .max
        }
        _ = try #require(Self.running(&machine))
        Self.accept(&machine, length: 1000)
        guard case .keepAndReport(let first) = machine.bodyReceived(100, now: 0) else { return miss("first") }
        #expect(first.received == 100)  // the first bytes are always reported
        guard case .keepAndFlushLater = machine.bodyReceived(300, now: 1) else { return miss("throttle") }
        #expect(
            machine.join(Self.subscriber(2, progressive: true))
                == .joined(
                    replay: Machine.ProgressReport(
                        listeners: [Machine.Listener(id: 2, progressive: true)], received: 400, expected: 1000)))
        #expect(machine.joinCount == 2)
    }

    @Test func progressIsThrottledByBytesAndTimeAndTheLastCountGoesOutAtTheEnd() throws {
        var machine = Self.machine {
            $0.progressByteInterval = 1000
            $0.progressTimeInterval = 50
        }
        _ = try #require(Self.running(&machine))
        Self.accept(&machine)
        #expect(machine.bodyReceived(10, now: 0).report != nil)  // first
        #expect(machine.bodyReceived(10, now: 10).report == nil)
        #expect(machine.bodyReceived(10, now: 20).report == nil)
        #expect(machine.bodyReceived(10, now: 60).report?.received == 40)  // 50 ns passed
        #expect(machine.bodyReceived(999, now: 61).report == nil)
        #expect(machine.bodyReceived(1, now: 62).report?.received == 1040)  // 1000 bytes passed
        #expect(machine.bodyReceived(5, now: 63).report == nil)
        guard case .end(let ending) = machine.hopSucceeded() else { return miss("no ending") }
        #expect(ending.finalReport?.received == 1045)
        #expect(ending.bodyBytes == 1045)
    }

    @Test func heldBackProgressIsFlushedOnceWhenTheStreamPauses() throws {
        var machine = Self.machine {
            $0.progressByteInterval = 1000
            $0.progressTimeInterval = 50
        }
        _ = try #require(Self.running(&machine))
        Self.accept(&machine)
        #expect(machine.bodyReceived(10, now: 100).report != nil)
        guard case .keepAndFlushLater(30) = machine.bodyReceived(10, now: 120) else { return miss("flush") }
        guard case .keep = machine.bodyReceived(10, now: 130) else { return miss("one timer at a time") }
        #expect(machine.flush(now: 150)?.received == 30)
        #expect(machine.flush(now: 151) == nil)  // nothing new
        guard case .keepAndFlushLater(40) = machine.bodyReceived(5, now: 160) else { return miss("flush") }
        _ = machine.hopSucceeded()
        #expect(machine.flush(now: 200) == nil)  // the timer outlived the transfer
    }

    @Test func aFailureCompletesEveryoneWithoutAFinalProgress() throws {
        var machine = Self.machine()
        _ = try #require(Self.running(&machine, [1, 2]))
        Self.accept(&machine)
        _ = machine.bodyReceived(10, now: 0)
        _ = machine.bodyReceived(10, now: 1)
        guard case .end(let ending) = machine.hopFailed(ImageError(.downloadFailed, stage: .download)) else {
            return miss("no ending")
        }
        #expect(ending.complete.count == 2 && ending.finalReport == nil && ending.releasesSlot)
        #expect(ending.result.error?.response?.statusCode == 200, "the failure carries the response it got")
    }

    // MARK: Redirects

    @Test func redirectsAreFollowedHopByHopAndTheirBodiesDropped() throws {
        var machine = Self.machine()
        _ = try #require(Self.running(&machine))
        guard case .redirect(let next) = machine.headReceived(status: 302, location: "/b.png") else {
            return miss("not followed")
        }
        #expect(next.url.absoluteString == "http://origin.test/b.png")
        machine.followRedirect(to: next)
        guard case .discard = machine.bodyReceived(100, now: 0) else { return miss("redirect body kept") }
        guard case .send(let hop) = machine.hopSucceeded() else { return miss("no next hop") }
        #expect(hop.isRedirect && hop.attempt == 1 && hop.request.url == next.url)
        #expect(machine.redirects == 1 && machine.wireBytes == 100)
        Self.accept(&machine, length: 4)
        _ = machine.bodyReceived(4, now: 1)
        guard case .end(let ending) = machine.hopSucceeded() else { return miss("no ending") }
        #expect(ending.bodyBytes == 4 && ending.wireBytes == 104)
    }

    @Test func redirectCyclesLimitsAndLargeRedirectBodiesFail() throws {
        var cycle = Self.machine()
        _ = try #require(Self.running(&cycle))
        guard case .redirect(let next) = cycle.headReceived(status: 301, location: "/b.png") else {
            return miss("not followed")
        }
        cycle.followRedirect(to: next)
        _ = cycle.hopSucceeded()
        guard case .refuse(let loop) = cycle.headReceived(status: 301, location: Self.url.absoluteString) else {
            return miss("cycle followed")
        }
        #expect(loop.message?.contains("cycle") == true)

        var limited = Self.machine { $0.maximumRedirects = 0 }
        _ = try #require(Self.running(&limited))
        guard case .final = limited.headReceived(status: 302, location: "/b.png") else {
            return miss("followed with redirects off")
        }

        var large = Self.machine { $0.maximumRedirectBody = 10 }
        _ = try #require(Self.running(&large))
        guard case .redirect(let hop) = large.headReceived(status: 307, location: "/c.png") else {
            return miss("not followed")
        }
        large.followRedirect(to: hop)
        guard case .refuse(let error) = large.bodyReceived(11, now: 0) else { return miss("kept draining") }
        #expect(error.code == .downloadTooLarge)
    }

    @Test func aClientThatFollowsRedirectsItselfGetsEveryHeadAsFinal() throws {
        var machine = Self.machine { $0.followsRedirects = false }
        _ = try #require(Self.running(&machine))
        guard case .final = machine.headReceived(status: 302, location: "/b.png") else {
            return miss("decided a redirect")
        }
    }

    // MARK: Retries

    @Test func a5xxIsRetriedWithBackOffFromTheFirstHop() throws {
        var machine = Self.machine { $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 0.2, maxDelay: 5) }
        _ = try #require(Self.running(&machine, [1, 2]))
        guard case .redirect(let next) = machine.headReceived(status: 302, location: "/b.png") else {
            return miss("not followed")
        }
        machine.followRedirect(to: next)
        _ = machine.hopSucceeded()
        guard case .retry(let attempt, let delay, let error) = machine.hopFailed(.invalidDownloadStatusCode(503))
        else { return miss("not retried") }
        #expect(attempt == 2 && delay == 200_000_000 && error.statusCode == 503)
        #expect(machine.state == .waitingToRetry(attempt: 2))
        guard case .send(let send) = machine.retryDue() else { return miss("not resent") }
        #expect(send.attempt == 2 && !send.isRedirect && send.request.url == Self.url && machine.redirects == 0)
        guard case .retry(3, 400_000_000, _) = machine.hopFailed(.invalidDownloadStatusCode(500), jitter: 1) else {
            return miss("no second retry")
        }
        _ = machine.retryDue()
        guard case .end(let ending) = machine.hopFailed(.invalidDownloadStatusCode(502)) else {
            return miss("retried past the limit")
        }
        #expect(ending.complete.count == 2 && ending.result.error?.statusCode == 502 && ending.releasesSlot)
    }

    @Test func onlyTransientFailuresBeforeTheBodyAreRetried() throws {
        let policy = HTTPRetryPolicy(maxAttempts: 5, baseDelay: 0, maxDelay: 0)
        let transport = ImageError(.downloadFailed, stage: .download, underlying: POSIXErrorBox())
        let notRetried: [ImageError] = [
            .invalidDownloadStatusCode(404), ImageError(.timedOut, stage: .download), .cancelled(stage: .download),
            ImageError(.downloadTooLarge, stage: .download),
        ]
        for error in notRetried {
            var machine = Self.machine { $0.retry = policy }
            _ = try #require(Self.running(&machine))
            guard case .end = machine.hopFailed(error) else { return miss("retried \(error.code)") }
        }
        var transient = Self.machine { $0.retry = policy }
        _ = try #require(Self.running(&transient))
        guard case .retry(2, 0, _) = transient.hopFailed(transport) else { return miss("not retried") }
        // Once body bytes arrived, the callers may have seen them: no retry.
        var streamed = Self.machine { $0.retry = policy }
        _ = try #require(Self.running(&streamed))
        Self.accept(&streamed)
        _ = streamed.bodyReceived(1, now: 0)
        guard case .end = streamed.hopFailed(transport) else { return miss("retried after the body") }
    }

    /// An origin that asks to be asked later (429, 408, or 503 with `Retry-After`) is retried no sooner than it
    /// asked; one that asks for longer than the policy's `maxDelay` is not retried at all. Before, 429 was never
    /// retried and `Retry-After: 3600` got a retry 0.2 s later.
    @Test func retryAfterIsTheLeastWaitAndA429IsRetried() throws {
        let policy = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 0.2, maxDelay: 5)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func answer(_ status: Int, _ headers: [String: String]) -> ImageError {
            ImageError.invalidDownloadStatusCode(status).attaching(
                response: ResponseMetadata(statusCode: status, headers: headers))
        }
        let date = HTTPDateFormat.format(now)
        let cases: [(ImageError, UInt64?)] = [
            (answer(429, [:]), 200_000_000),
            (answer(408, [:]), 200_000_000),
            (answer(503, ["retry-after": "2"]), 2_000_000_000),
            (answer(429, ["retry-after": "0"]), 200_000_000),
            (answer(503, ["retry-after": HTTPDateFormat.format(now + 3), "date": date]), 3_000_000_000),
            (answer(503, ["retry-after": HTTPDateFormat.format(now + 4)]), 4_000_000_000),
            (answer(503, ["retry-after": HTTPDateFormat.format(now - 60), "date": date]), 200_000_000),
            (answer(503, ["retry-after": "not a date"]), 200_000_000),
            (answer(429, ["retry-after": "3600"]), nil),
            (answer(503, ["retry-after": "99999999999999999999999"]), nil),
            (answer(503, ["retry-after": HTTPDateFormat.format(now + 60), "date": date]), nil),
            (answer(404, ["retry-after": "1"]), nil),
        ]
        for (error, expected) in cases {
            var machine = Self.machine { $0.retry = policy }
            _ = try #require(Self.running(&machine))
            let action = machine.hopFailed(error, jitter: 1, now: now)
            let label = "\(error.statusCode ?? 0) \(error.response?.headers ?? [:])"
            switch (action, expected) {
            case (.retry(2, let delay, let carried), let expected?):
                #expect(delay == expected && carried.statusCode == error.statusCode, "\(label): \(delay)")
            case (.end(let ending), nil):
                #expect(ending.result.error?.statusCode == error.statusCode, "\(label)")
            default:
                Issue.record("\(label): \(action)")
            }
        }
    }

    // MARK: Deadline

    @Test func theDeadlineFailsTheRunningTaskAndItsEndCarriesTheTimeout() throws {
        var machine = Self.machine { $0.timeout = 1 }
        _ = machine.join(Self.subscriber(1))
        guard case .send(_, let watch?) = machine.slotGranted(now: 0) else { return miss("not watched") }
        #expect(watch == 125_000_000)
        guard case .checkAgain = machine.paceCheck(now: 999_999_999) else { return miss("too early") }
        guard case .failTask(let error) = machine.paceCheck(now: 1_000_000_000) else { return miss("late") }
        #expect(error.code == .timedOut)
        guard case .stopWatching = machine.paceCheck(now: 1_100_000_000) else { return miss("failed twice") }
        // A task created after the deadline is failed at once.
        guard case .fail = machine.taskStarted() else { return miss("task not failed") }
        // The task ends with whatever error AsyncHTTPClient reports; the transfer ends with the timeout.
        guard case .end(let ending) = machine.hopFailed(.cancelled(stage: .download)) else {
            return miss("no ending")
        }
        #expect(ending.result.error?.code == .timedOut && ending.releasesSlot)
    }

    @Test func theDeadlinePassingDuringARetryBackOffEndsTheTransferOnce() throws {
        var machine = Self.machine {
            $0.timeout = 1
            $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 5, maxDelay: 5)
        }
        _ = try #require(Self.running(&machine))
        guard case .retry = machine.hopFailed(.invalidDownloadStatusCode(503)) else { return miss("no retry") }
        guard case .end(let ending) = machine.paceCheck(now: 1_000_000_000) else { return miss("no ending") }
        #expect(ending.result.error?.code == .timedOut && ending.releasesSlot && !ending.cancelsTask)
        // The back-off timer fires later: nothing happens, nothing is reported or released again.
        guard case .none = machine.retryDue() else { return miss("resent after the end") }
        guard case .stopWatching = machine.paceCheck(now: 2_000_000_000) else { return miss("ended twice") }
        #expect(machine.abort(.cancelled(stage: .download)) == nil)
    }

    // MARK: Responses and header checks

    @Test func aCallersOwnVerdictFailsItAloneAndAResponseNobodyCanUseEndsTheTransfer() throws {
        var machine = Self.machine()
        _ = machine.join(Self.subscriber(1))
        _ = machine.join(Self.subscriber(2, modifies: true))
        _ = machine.join(Self.subscriber(3, modifies: true))
        _ = machine.slotGranted(now: 0)
        _ = machine.headReceived(status: 200, location: nil)
        let refused = ImageError(.invalidDownloadResponse, stage: .download)
        let personal = Self.response(299)
        let verdict = machine.responseArrived(
            Self.response(), wireLength: nil, sharedError: nil, verdicts: [2: .failure(refused), 3: .success(personal)])
        #expect(verdict.failed.map { $0.0.id } == [2] && verdict.refusal == nil && verdict.ending == nil)
        #expect(machine.subscriber(3)?.personalResponse == personal)

        // A 500 for everyone: callers without a modifier wait for the task's end (a retry may still help).
        var shared = Self.machine()
        _ = shared.join(Self.subscriber(1))
        _ = shared.join(Self.subscriber(2, modifies: true))
        _ = shared.slotGranted(now: 0)
        let error = ImageError.invalidDownloadStatusCode(500)
        let split = shared.responseArrived(
            Self.response(500), wireLength: nil, sharedError: error, verdicts: [2: .failure(refused)])
        #expect(split.failed.map { $0.0.id } == [2] && split.refusal?.statusCode == 500 && split.ending == nil)
        guard case .end(let ending) = shared.hopFailed(error) else { return miss("no ending") }
        #expect(ending.complete.map(\.id) == [1])

        // A caller's own modifier rescues a 404: it continues, callers without one fail now.
        var rescued = Self.machine()
        _ = rescued.join(Self.subscriber(1))
        _ = rescued.join(Self.subscriber(2, modifies: true))
        _ = rescued.slotGranted(now: 0)
        let missing = ImageError.invalidDownloadStatusCode(404)
        let kept = rescued.responseArrived(
            Self.response(404), wireLength: nil, sharedError: missing, verdicts: [2: .success(Self.response(200))])
        #expect(kept.failed.map { $0.0.id } == [1] && kept.failed.first?.1.statusCode == 404)
        #expect(kept.refusal == nil && kept.ending == nil && rescued.state == .running(headReceived: true))

        // Everyone refused it: the transfer ends here, reported once; its task's end only frees the slot.
        var nobody = Self.machine()
        _ = nobody.join(Self.subscriber(1, modifies: true))
        _ = nobody.slotGranted(now: 0)
        let alone = nobody.responseArrived(
            Self.response(), wireLength: nil, sharedError: nil, verdicts: [1: .failure(refused)])
        let end = try #require(alone.ending)
        #expect(alone.refusal?.code == .invalidDownloadResponse && end.complete.isEmpty && !end.releasesSlot)
        guard case .releaseSlot = nobody.hopFailed(refused) else { return miss("slot not freed") }
    }

    @Test func anAnnouncedLengthOverTheLimitIsRefusedWithTheResponse() throws {
        var machine = Self.machine { $0.maximumResponseSize = 100 }
        _ = try #require(Self.running(&machine))
        _ = machine.headReceived(status: 200, location: nil)
        let verdict = machine.responseArrived(
            Self.response(length: 101), wireLength: 101, sharedError: nil, verdicts: [:])
        #expect(verdict.refusal?.code == .downloadTooLarge)
        #expect(verdict.refusal?.response?.expectedContentLength == 101)
    }

    @Test func headerChecksFailRejectingCallersAloneAndTheLastOneEndsTheTransfer() throws {
        var machine = Self.machine()
        _ = machine.join(Self.subscriber(1, checks: true))
        _ = machine.join(Self.subscriber(2, checks: true))
        _ = machine.slotGranted(now: 0)
        Self.accept(&machine)
        #expect(machine.pendingHeaderChecks == 2)
        let bomb = ImageError(.imageTooLarge, stage: .download)
        let first = machine.headerChecksAnswered(accepted: [2], rejected: [1: bomb])
        #expect(first.failed.map { $0.0.id } == [1] && first.ending == nil && machine.pendingHeaderChecks == 0)

        var alone = Self.machine()
        _ = alone.join(Self.subscriber(1, checks: true))
        _ = alone.slotGranted(now: 0)
        Self.accept(&alone)
        let verdict = alone.headerChecksAnswered(accepted: [], rejected: [1: bomb])
        #expect(verdict.refusal?.code == .imageTooLarge && verdict.ending?.result.error?.code == .imageTooLarge)
    }
}
