import Foundation
import ImageCore
import Testing

@testable import HTTPLoader

/// The transfer's one-ending rule over random event sequences, checked against a plain model of what every
/// schedule must keep (the seed is printed; `TRANSFER_SCHEDULE_SEED=<seed>` replays it).
@Suite struct TransferScheduleTests {
    typealias Machine = TransferStateMachineTests.Machine

    /// Random event sequences against the rules every transfer keeps: each subscriber hears back exactly once,
    /// the transfer ends (and is reported) at most once, and a slot it held is given back exactly once.
    @Test func everyScheduleEndsOnceCompletesEachCallerOnceAndReleasesTheSlotOnce() {
        let seed =
            ProcessInfo.processInfo.environment["TRANSFER_SCHEDULE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("TransferScheduleTests: 200 schedules, seed \(seed) (replay: TRANSFER_SCHEDULE_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        for schedule in 0..<200 {
            var model = ScheduleModel()
            var machine = TransferStateMachineTests.machine {
                $0.timeout = 1
                $0.retry = HTTPRetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.01)
                $0.maximumResponseSize = 50
            }
            var now: UInt64 = 0
            var nextID: UInt64 = 1
            for _ in 0..<40 {
                now += random.next(upTo: 300_000_000)
                switch random.next(upTo: 12) {
                case 0, 1:
                    if case .joined = machine.join(
                        TransferStateMachineTests.subscriber(nextID, checks: random.next(upTo: 2) == 0))
                    {
                        model.waiting.insert(nextID)
                    }
                    nextID += 1
                case 2:
                    let id = random.next(upTo: nextID + 1)
                    model.apply(machine.leave(id), leaver: id)
                case 3:
                    model.apply(start: machine.slotGranted(now: now))
                case 4 where model.taskOut:
                    let status = [200, 302, 503][Int(random.next(upTo: 3))]
                    if case .redirect(let next) = machine.headReceived(status: status, location: "/r\(now)") {
                        machine.followRedirect(to: next)
                    }
                case 5 where model.taskOut && machine.state == .running(headReceived: false):
                    let verdicts = Dictionary(
                        uniqueKeysWithValues: machine.subscribers.filter { _ in random.next(upTo: 4) == 0 }.map {
                            ($0.id, Result<ResponseMetadata, ImageError>.failure(.invalidDownloadStatusCode(418)))
                        })
                    model.apply(
                        verdict: machine.responseArrived(
                            TransferStateMachineTests.response(), wireLength: nil, sharedError: nil, verdicts: verdicts)
                    )
                case 6 where model.taskOut:
                    _ = machine.bodyReceived(Int(random.next(upTo: 30)), now: now)
                    if random.next(upTo: 2) == 0, !machine.subscribers.isEmpty {
                        let id = machine.subscribers[Int(random.next(upTo: UInt64(machine.subscribers.count)))].id
                        model.apply(
                            verdict: machine.headerChecksAnswered(
                                accepted: [], rejected: [id: ImageError(.imageTooLarge, stage: .download)]))
                    }
                case 7 where model.taskOut:
                    model.apply(hop: machine.hopSucceeded())
                case 8 where model.taskOut:
                    model.apply(hop: machine.hopFailed(.invalidDownloadStatusCode(503)))
                case 9:
                    model.apply(hop: machine.retryDue())
                case 10:
                    model.apply(pace: machine.paceCheck(now: now))
                case 11:
                    if let ending = machine.abort(.cancelled(stage: .download)) { model.apply(ending) }
                default:
                    break
                }
                if model.violation != nil { break }
            }
            // Drain: a task still out ends, then whatever waits is aborted.
            if model.taskOut { model.apply(hop: machine.hopFailed(.cancelled(stage: .download))) }
            if let ending = machine.abort(.cancelled(stage: .download)) { model.apply(ending) }
            if model.taskOut { model.apply(hop: machine.hopFailed(.cancelled(stage: .download))) }
            #expect(model.violation == nil, "schedule \(schedule), seed \(seed): \(model.violation ?? "")")
            #expect(model.endings <= 1, "schedule \(schedule), seed \(seed)")
            #expect(model.waiting.isEmpty, "schedule \(schedule), seed \(seed): never completed \(model.waiting)")
            #expect(!model.slotHeld, "schedule \(schedule), seed \(seed): the slot was never given back")
        }
    }
}

/// What a schedule must keep, tracked from the actions alone.
struct ScheduleModel {
    var waiting: Set<UInt64> = []
    var completed: Set<UInt64> = []
    var endings = 0
    var slotHeld = false
    var taskOut = false
    var violation: String?

    mutating func complete(_ id: UInt64) {
        if completed.contains(id) { violation = "\(id) completed twice" }
        if waiting.remove(id) == nil && !completed.contains(id) { violation = "\(id) completed without waiting" }
        completed.insert(id)
    }

    mutating func apply(_ action: TransferStateMachine.LeaveAction, leaver: UInt64) {
        switch action {
        case .none: break
        case .completeSubscriber: complete(leaver)
        case .completeSubscriberAndEnd(let ending):
            complete(leaver)
            apply(ending)
        }
    }

    mutating func apply(start: TransferStateMachine.StartAction) {
        switch start {
        case .send:
            if slotHeld { violation = "sent twice" }
            slotHeld = true
            taskOut = true
        case .releaseSlot: break  // never granted in this model: the queue gets its grant back
        }
    }

    mutating func apply(verdict: TransferStateMachine.Verdict) {
        for (subscriber, _) in verdict.failed { complete(subscriber.id) }
        if let ending = verdict.ending { apply(ending) }
    }

    mutating func apply(hop: TransferStateMachine.HopEndAction) {
        switch hop {
        case .none: break
        case .send: taskOut = true
        case .retry: taskOut = false
        case .end(let ending):
            taskOut = false
            apply(ending)
        case .releaseSlot:
            taskOut = false
            release()
        }
    }

    mutating func apply(pace: TransferStateMachine.PaceAction) {
        if case .end(let ending) = pace { apply(ending) }
    }

    mutating func apply(_ ending: TransferStateMachine.Ending) {
        endings += 1
        if endings > 1 { violation = "ended twice" }
        if ending.releasesSlot && taskOut { violation = "slot released while its task runs" }
        for subscriber in ending.complete { complete(subscriber.id) }
        if ending.releasesSlot { release() }
        if !waiting.isEmpty { violation = "ended with \(waiting) never completed" }
    }

    mutating func release() {
        if !slotHeld { violation = "slot released twice" }
        slotHeld = false
    }
}

/// A small seeded generator (SplitMix64), so a failing schedule can be replayed from its printed seed.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(upTo bound: UInt64) -> UInt64 { bound == 0 ? 0 : next() % bound }
}

struct POSIXErrorBox: Error, Sendable {}

/// Records an issue; returns Void, so a test can `return miss("…")` from a `guard`.
func miss(_ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
    Issue.record(comment, sourceLocation: sourceLocation)
}

extension TransferStateMachine.BodyAction {
    var report: TransferStateMachine.ProgressReport? {
        if case .keepAndReport(let report) = self { return report }
        return nil
    }
}
