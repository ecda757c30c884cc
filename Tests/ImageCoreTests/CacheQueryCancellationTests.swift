import Foundation
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

/// A cache level the test answers by hand: each query waits until the schedule answers it.
private final class ManualLevel: ImageCacheProtocol {
    /// What the level finds.
    enum Answer: Sendable, Equatable {
        case hit(Int)
        case miss
        case failure
    }

    /// What the level does when its query is cancelled.
    enum CancelBehaviour: Sendable, CaseIterable {
        /// Completes with `cancelled` at once, inside `cancel()`.
        case completesAtOnce
        /// Completes with `cancelled` when the schedule next answers it (DiskCache today: when its read starts).
        case completesLater
        /// Ignores the cancel and answers normally later.
        case ignores
    }

    struct Pending: Sendable {
        let completion: @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
        let operation: CancellableOperation
    }

    let index: Int
    let answer: Answer
    let answersSynchronously: Bool
    let cancelBehaviour: CancelBehaviour
    private let pending = Locked<[Pending]>([])
    private let started = Locked(0)

    init(index: Int, answer: Answer, answersSynchronously: Bool, cancelBehaviour: CancelBehaviour) {
        self.index = index
        self.answer = answer
        self.answersSynchronously = answersSynchronously
        self.cancelBehaviour = cancelBehaviour
    }

    var queriesStarted: Int { started.value }
    var hasPending: Bool { !pending.value.isEmpty }

    var result: Result<CacheQueryResult?, ImageError> {
        switch answer {
        case .hit(let id):
            let pixels = PixelBuffer(width: id, height: 1, layout: .gray8, bytes: [UInt8](repeating: 1, count: id))
            return .success(CacheQueryResult(image: Image(pixels: pixels), cacheType: .memory))
        case .miss: return .success(nil)
        case .failure: return .failure(.cacheFailure(SendableErrorBox(POSIXError(.EIO))))
        }
    }

    /// Answers the oldest waiting query (with `cancelled` if it was cancelled and this level says so).
    func answerNext() {
        guard let next = pending.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
        if next.operation.isCancelled && cancelBehaviour == .completesLater {
            next.completion(.failure(.cancelled(stage: .cacheQuery)))
        } else {
            next.completion(result)
        }
    }

    func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        started.withLock { $0 += 1 }
        if answersSynchronously {
            completion(result)
            return nil
        }
        let operation = CancellableOperation()
        let entry = Pending(completion: completion, operation: operation)
        pending.withLock { $0.append(entry) }
        if cancelBehaviour == .completesAtOnce {
            operation.onCancel { [weak self] in
                let removed = self?.pending.withLock { pending -> Bool in
                    let before = pending.count
                    pending.removeAll { $0.operation === operation }
                    return pending.count < before
                }
                if removed == true { completion(.failure(.cancelled(stage: .cacheQuery))) }
            }
        }
        return operation
    }

    func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) { completion?(.success(())) }
    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        completion?()
    }
    func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) { completion(.none) }
    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) { completion?() }
}

/// What a query's completion received, and when.
private final class CompletionLog: Sendable {
    private let entries = Locked<[(step: Int, result: Result<CacheQueryResult?, ImageError>)]>([])
    let step = Locked(0)

    var handler: @Sendable (Result<CacheQueryResult?, ImageError>) -> Void {
        { result in
            let now = self.step.value
            self.entries.withLock { $0.append((now, result)) }
        }
    }
    var count: Int { entries.value.count }
    var first: (step: Int, result: Result<CacheQueryResult?, ImageError>)? { entries.value.first }
}

/// Issue 25 item 9: cancelling a cache query completes it exactly once, with `cancelled`, at cancel time.
@Suite struct CacheQueryCancellationTests {
    private static let policies: [CachesManager.Policy] = [.serial, .concurrent, .highestOnly, .lowestOnly]

    /// The reference model: what a query that was not cancelled answers (the hit's id, or nil).
    private static func expectedHit(_ levels: [ManualLevel], policy: CachesManager.Policy) -> Int? {
        let asked: [ManualLevel]
        switch policy {
        case .highestOnly: asked = Array(levels.prefix(1))
        case .lowestOnly: asked = Array(levels.suffix(1))
        case .serial, .concurrent: asked = levels
        }
        // Serial stops at the first hit; concurrent asks all and keeps the highest-priority hit; a failure is a miss.
        for level in asked { if case .hit(let id) = level.answer { return id } }
        return nil
    }

    private static func hitID(_ result: Result<CacheQueryResult?, ImageError>) -> Int?? {
        guard case .success(let hit) = result else { return .none }
        return .some(hit?.image?.width)
    }

    @Test(
        "SDImageCache.queryCacheOperation cancel (SDImageCacheToken): over random schedules of query start, level answers and cancel, the completion runs exactly once — cancelled iff the cancel came first, and at the cancel"
    )
    func randomSchedulesCompleteExactlyOnce() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("CacheQueryCancellationTests seed: \(seed)")
        var rng = SplitMix64(seed: seed)
        var cancelledRuns = 0
        var answeredRuns = 0
        for run in 0..<3000 {
            let policy = Self.policies[Int.random(in: 0..<Self.policies.count, using: &rng)]
            let levels = (0..<Int.random(in: 1...4, using: &rng)).map { index in
                ManualLevel(
                    index: index,
                    answer: [.hit(index + 1), .miss, .miss, .failure][Int.random(in: 0..<4, using: &rng)],
                    answersSynchronously: Int.random(in: 0..<4, using: &rng) == 0,
                    cancelBehaviour: ManualLevel.CancelBehaviour.allCases.randomElement(using: &rng)!)
            }
            let outcome = Self.runSchedule(levels, policy: policy, rng: &rng)
            switch outcome {
            case .cancelled: cancelledRuns += 1
            case .answered: answeredRuns += 1
            case .violation(let message):
                // One failing schedule is enough: report it with what replays it, and stop.
                Issue.record("seed \(seed) run \(run) policy \(policy): \(message)")
                return
            }
        }
        // Both branches of the property were exercised.
        #expect(cancelledRuns > 300 && answeredRuns > 300, "cancelled \(cancelledRuns), answered \(answeredRuns)")
    }

    private enum ScheduleOutcome {
        case cancelled
        case answered
        case violation(String)
    }

    /// Runs one random schedule: the query starts (step 0), then level answers and at most one cancel interleave
    /// until nothing is pending; checks the contract against the reference model.
    private static func runSchedule(
        _ levels: [ManualLevel], policy: CachesManager.Policy, rng: inout SplitMix64
    ) -> ScheduleOutcome {
        let manager = CachesManager(levels)
        manager.queryPolicy = policy
        let log = CompletionLog()
        let operation = manager.queryImage(
            forKey: "k", options: [], context: ImageContext(), cacheType: .all, completion: log.handler)
        var cancelStep: Int?
        var startedAtCancel: [Int] = []
        for step in 1...64 {
            log.step.withLock { $0 = step }
            let pending = levels.filter(\.hasPending)
            let mayCancel = cancelStep == nil && Int.random(in: 0..<3, using: &rng) == 0
            if mayCancel || (pending.isEmpty && cancelStep == nil && Bool.random(using: &rng)) {
                let completedBefore = log.count
                startedAtCancel = levels.map(\.queriesStarted)
                operation?.cancel()
                cancelStep = step
                if completedBefore == 0, operation != nil, log.count != 1 {
                    return .violation("cancel() returned before the completion ran")
                }
                continue
            }
            guard let level = pending.randomElement(using: &rng) else { break }
            level.answerNext()
        }
        guard log.count == 1, let (completedAt, result) = log.first else {
            return .violation("\(log.count) completions")
        }
        if let cancelStep, completedAt >= cancelStep, operation != nil {
            if completedAt != cancelStep {
                return .violation("completed at step \(completedAt), cancelled at \(cancelStep)")
            }
            if result.error?.isCancellation != true { return .violation("cancel came first, completed with \(result)") }
            if levels.map(\.queriesStarted) != startedAtCancel {
                return .violation("a level was asked after the cancel")
            }
            return .cancelled
        }
        if result.error?.isCancellation == true { return .violation("answered first, yet completed with cancelled") }
        let expected = expectedHit(levels, policy: policy)
        if hitID(result) != .some(expected) {
            return .violation(
                "completed with \(result), the reference model answers hit \(String(describing: expected))")
        }
        return .answered
    }

    @Test(
        "SDImageCacheToken cancel from another thread: every query completes once; a cancelled completion runs before cancel() returns; cancelled only after a cancel"
    )
    func concurrentCancelsAndAnswersRaceSafely() async {
        // Serial queues, one per answering thread: a queue created serial gets a thread of its own when it has work
        // (a concurrent one shares the pool the canceller's task may be spinning on, and could wait for it).
        let answeringQueues = (0..<3).map { DispatchQueue(label: "answers-\($0)") }
        let violations = Locked<[String]>([])
        let won = Locked((answers: 0, cancels: 0))
        await withTaskGroup(of: Void.self) { group in
            for run in 0..<400 {
                group.addTask {
                    let policy = Self.policies[run % Self.policies.count]
                    let levels = (0..<3).map {
                        ManualLevel(
                            index: $0, answer: $0 == 2 ? .hit(3) : .miss, answersSynchronously: false,
                            cancelBehaviour: ManualLevel.CancelBehaviour.allCases[(run + $0) % 3])
                    }
                    let manager = CachesManager(levels)
                    manager.queryPolicy = policy
                    let completions = Locked<[Result<CacheQueryResult?, ImageError>]>([])
                    let cancelCalled = Locked(false)
                    let operation = manager.queryImage(
                        forKey: "k", options: [], context: ImageContext(), cacheType: .all
                    ) { result in
                        if result.error?.isCancellation == true, !cancelCalled.value {
                            violations.withLock { $0.append("run \(run): cancelled without a cancel") }
                        }
                        completions.withLock { $0.append(result) }
                    }
                    // Answer the levels on other threads while this one cancels. The two meet: an answer starts,
                    // the canceller (spinning until then) says it cancels now, and the answer (spinning until then,
                    // at most a millisecond) goes on, so both run at the same moment. Then one side waits a little
                    // (from nothing to some tens of microseconds of spinning, the side and the wait varying per run),
                    // so each side wins many races however fast an answer is and however loaded the machine is.
                    let cancels = run % 5 != 0
                    let answerWaits = run / 5 % 2 == 0
                    let spins = [0, 30, 300, 3_000, 30_000][run / 10 % 5]
                    let answering = Atomic<Bool>(false)
                    let cancelling = Atomic<Bool>(false)
                    for queue in answeringQueues {
                        queue.async {
                            answering.store(true, ordering: .releasing)
                            if cancels {
                                let giveUp = DispatchTime.now().uptimeNanoseconds + 1_000_000
                                while !cancelling.load(ordering: .acquiring),
                                    DispatchTime.now().uptimeNanoseconds < giveUp
                                {}
                                var spun = 0
                                while answerWaits, spun < spins, cancelling.load(ordering: .acquiring) { spun += 1 }
                            }
                            for level in levels { level.answerNext() }
                        }
                    }
                    var returnedEarly = false
                    if cancels {
                        while !answering.load(ordering: .acquiring) {}
                        cancelCalled.withLock { $0 = true }
                        cancelling.store(true, ordering: .releasing)
                        var spun = 0
                        while !answerWaits, spun < spins, answering.load(ordering: .acquiring) { spun += 1 }
                        operation?.cancel()
                        returnedEarly = completions.value.isEmpty
                    }
                    // Drain whatever is still pending (a level that ignored the cancel, or no cancel at all).
                    for _ in 0..<200 where completions.value.isEmpty || levels.contains(where: \.hasPending) {
                        for level in levels { level.answerNext() }
                        try? await Task.sleep(nanoseconds: 200_000)
                    }
                    // Only an answer already being delivered on another thread may finish after cancel() returned
                    // (CacheQueryOperation's contract): a cancelled completion never does.
                    let late = completions.value.first
                    if returnedEarly, late == nil || late?.error?.isCancellation == true {
                        let got = late.map { "\($0)" } ?? "nothing"
                        let message = "run \(run) (\(policy)): cancel() returned before a cancelled completion (\(got))"
                        violations.withLock { $0.append(message) }
                    }
                    if completions.value.count != 1 {
                        violations.withLock { $0.append("run \(run): \(completions.value.count) completions") }
                    } else if cancels {
                        let cancelled = completions.value[0].error?.isCancellation == true
                        won.withLock { cancelled ? ($0.cancels += 1) : ($0.answers += 1) }
                    }
                }
            }
        }
        #expect(violations.value.isEmpty, "\(violations.value.prefix(5))")
        // Of the 320 cancelled queries, both sides won many: the cancel and the answers really raced.
        let (answers, cancels) = won.value
        #expect(answers > 20, "the answers won only \(answers) races (the cancel \(cancels)): hardly a race")
        #expect(cancels > 20, "the cancel won only \(cancels) races (the answers \(answers)): hardly a race")
    }

    @Test(
        "SDImageCache query cancel through ImageManager: a load cancelled during its disk query completes with cancelled at once, and the late disk answer changes nothing"
    )
    func aLoadCancelledDuringItsCacheQuery() async throws {
        let level = ManualLevel(index: 0, answer: .hit(5), answersSynchronously: false, cancelBehaviour: .ignores)
        let loader = ScriptedLoader()
        let manager = ImageManager(cache: CachesManager([level]), loader: loader)
        let recorder = DeliveryRecorder()
        let operation = manager.loadImage(with: testURL(), context: ImageContext(), completed: recorder.handler)
        #expect(level.hasPending)
        operation.cancel()
        #expect(recorder.all.count == 1 && recorder.final?.error?.isCancellation == true)
        level.answerNext()
        try? await Task.sleep(nanoseconds: 20_000_000)
        #expect(recorder.all.count == 1, "the hit that arrived after the cancel is dropped")
        #expect(loader.requestCount == 0)
    }
}
