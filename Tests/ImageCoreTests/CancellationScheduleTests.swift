import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Randomized schedules of the real manager shell: concurrent loads of a few URLs with cancels injected at every
/// stage (right after `loadImage` returns, during the cache query, the disk read, the download, the decode, the
/// transform, the store). Invariants per round: every load completes exactly once and receives nothing after its
/// final result; a load that was not cancelled succeeds; no job or load is left registered; a later load of each
/// URL completes.
///
/// CI runs `CANCEL_SCHEDULE_ROUNDS` rounds (default 150); set it higher for a long run. `CANCEL_SCHEDULE_SEED`
/// replays a failing schedule (the seed is printed on failure).
@Suite struct CancellationScheduleTests {
    /// Where a load is cancelled: one of the stages, right after it started, or never.
    enum CancelPoint: CaseIterable {
        case never, afterStart, cacheQuery, diskRead, download, downloadAnswer, decode, transform, store

        var stage: TestStage? {
            switch self {
            case .never, .afterStart: nil
            case .cacheQuery: .cacheQuery
            case .diskRead: .diskRead
            case .download: .download
            case .downloadAnswer: .downloadAnswer
            case .decode: .decode
            case .transform: .transform
            case .store: .store
            }
        }
    }

    /// One load of a round and what happened to it.
    final class Load: Sendable {
        private struct Handle {
            var operation: ImageLoadOperation?
            /// A stage asked to cancel before `loadImage` returned the handle (a hook fired inside it).
            var cancelRequested = false
            /// `cancel()` was called on the handle.
            var cancelCalled = false
        }

        let cancelAt: CancelPoint
        let recorder = DeliveryRecorder()
        private let handle = Locked(Handle())

        init(cancelAt: CancelPoint) { self.cancelAt = cancelAt }

        /// Keeps the handle `loadImage` returned, and cancels it now if a stage asked for that inside `loadImage`.
        func started(_ operation: ImageLoadOperation) {
            let requested = handle.withLock { handle -> Bool in
                handle.operation = operation
                return handle.cancelRequested
            }
            if requested { cancel() }
        }

        /// Cancels the load (once `loadImage` returned: a cancel asked for before runs then).
        func cancel() {
            let operation = handle.withLock { handle -> ImageLoadOperation? in
                guard let operation = handle.operation else {
                    handle.cancelRequested = true
                    return nil
                }
                handle.cancelCalled = true
                return operation
            }
            operation?.cancel()
        }

        /// A cancel was asked for (it may not have happened yet, or may have come after the final result).
        var cancelAsked: Bool { handle.withLock { $0.cancelRequested || $0.cancelCalled } }

        /// `cancel()` was called before the final result was decided: the operation is cancelled (it only becomes
        /// so when cancelled unfinished, and before the cancel delivers anything), so its final result is
        /// `cancelled`.
        var cancelTookEffect: Bool {
            let (operation, called) = handle.withLock { ($0.operation, $0.cancelCalled) }
            return called && operation?.isCancelled == true
        }

        /// Drops the handle (the round is over).
        func release() { handle.withLock { $0.operation = nil } }
    }

    /// Per cancel point, the loads whose cancel took effect (and which completed with `cancelled`).
    typealias Tally = [CancelPoint: Int]

    @Test func randomCancelsAtEveryStageNeverStrandAFetch() async throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["CANCEL_SCHEDULE_ROUNDS"].flatMap(Int.init) ?? 150
        let seed = environment["CANCEL_SCHEDULE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max >> 1)
        var generator = SplitMix64(seed: seed)
        var cancelled = Tally()
        for round in 0..<rounds {
            let failure = await runRound(&generator, tally: &cancelled)
            if let failure {
                Issue.record("round \(round) of seed \(seed): \(failure)")
                return
            }
        }
        // Every cancel point was attacked: loads really were cancelled there, not only after they finished.
        let floor = rounds / 5
        for point in CancelPoint.allCases where point != .never {
            let count = cancelled[point, default: 0]
            #expect(count >= floor, "only \(count) loads in \(rounds) rounds (seed \(seed)) were cancelled at \(point)")
        }
    }

    /// Runs one round; returns a description of the first broken invariant.
    private func runRound(_ generator: inout SplitMix64, tally: inout Tally) async -> String? {
        // Half the rounds with a cache that answers memory synchronously (the manager's fast path), half without.
        let rig = Rig(
            loaderDelay: Double(generator.next() % 3) / 1000, decodeDelay: generator.next() % 4 == 0 ? 0.001 : 0,
            cacheAnswersSynchronously: generator.next() % 2 == 0)
        let urls = (0..<3).map { testURL("u\($0)") }
        for (index, url) in urls.enumerated() {
            let colors: [RGBAColor] = index == 2 ? [.white, .black] : [.white]
            if generator.next() % 3 == 0 {
                rig.loader.set(.progressive(TestCoder.data(width: 12, height: 12, colors: colors), chunks: 3), for: url)
            } else {
                rig.loader.set(
                    .data(TestCoder.data(width: 12, height: 12, colors: colors), ResponseMetadata(url: url)), for: url)
            }
            switch generator.next() % 4 {
            case 0:
                rig.cache.seedDisk(TestCoder.data(width: 12, height: 12, colors: colors), forKey: url.absoluteString)
            case 1: rig.cache.seedDisk(Data("broken".utf8), forKey: url.absoluteString)
            default: break
            }
        }
        let transformer = TestTransformer(width: 4, height: 4)
        let loads = (0..<12).map { _ in Load(cancelAt: CancelPoint.allCases.randomElement(using: &generator)!) }
        let hooked: @Sendable (TestStage) -> Void = { stage in
            for load in loads where load.cancelAt.stage == stage && !load.cancelAsked { load.cancel() }
        }
        rig.cache.hook.set(hooked)
        rig.loader.hook.set(hooked)
        rig.coder.hook.set(hooked)
        transformer.hook.set(hooked)
        let optionSets: [ImageOptions] = [[], .waitStoreCache, .refreshCached, .progressiveLoad, .queryDiskDataSync]
        var plans: [(URL, ImageOptions, [ImageContextOption: any Sendable])] = []
        for _ in loads {
            let url = urls.randomElement(using: &generator)!
            var extra: [ImageContextOption: any Sendable] = [:]
            switch generator.next() % 3 {
            case 0: extra[.imageTransformer] = transformer
            case 1: extra[.imageThumbnailPixelSize] = PixelSize(width: 6, height: 6)
            default: break
            }
            plans.append((url, optionSets.randomElement(using: &generator)!, extra))
        }
        // Start from several threads at once, so joins and cancels race.
        await withTaskGroup(of: Void.self) { group in
            for (index, load) in loads.enumerated() {
                let (url, options, extra) = plans[index]
                let context = rig.context(extra)
                group.addTask {
                    let operation = rig.manager.loadImage(
                        with: url, options: options, context: context, completed: load.recorder.handler)
                    load.started(operation)
                    if load.cancelAt == .afterStart { load.cancel() }
                }
            }
        }
        for (index, load) in loads.enumerated() {
            guard let final = await load.recorder.waitForFinal(timeout: 10) else {
                return "load \(index) (cancel at \(load.cancelAt), \(plans[index].1)) never completed"
            }
            if load.recorder.finals.count != 1 { return "load \(index) completed \(load.recorder.finals.count) times" }
            if case .success(let last) = load.recorder.all.last, !last.isFinal {
                return "load \(index) got a delivery after its final result"
            }
            if !load.cancelTookEffect, case .failure(let error) = final {
                return "load \(index) was not cancelled (or only after its final result) but failed: \(error)"
            }
            if load.cancelTookEffect {
                guard case .failure(let error) = final, error.code == .cancelled else {
                    return "load \(index) was cancelled before its final result, which is \(final)"
                }
                tally[load.cancelAt, default: 0] += 1
            }
        }
        for load in loads { load.release() }
        rig.cache.hook.set(nil)
        rig.loader.hook.set(nil)
        rig.coder.hook.set(nil)
        transformer.hook.set(nil)
        guard await waitUntil(timeout: 10, { !rig.manager.isRunning }) else {
            return "the manager still runs a job or a load after every load completed"
        }
        for url in urls {
            guard case .success = await rig.load(url) else { return "a later load of \(url) failed" }
        }
        return nil
    }
}
