import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

@Suite("Downloads ahead of the decoder (ImageManager.maxDownloadsAheadOfDecoding)")
struct DownloadAdmissionTests {
    /// The plain reference: a list of admitted ids and a list of waiting ones with their priority and the order
    /// they asked in; the next to start is the highest priority's earliest.
    struct Reference {
        var limit: Int
        var ahead: [Int] = []
        var waiting: [(id: Int, priority: ImageLoadPriority, order: Int)] = []
        var asked = 0

        mutating func request(_ id: Int, priority: ImageLoadPriority) -> Bool {
            if ahead.count < limit && waiting.isEmpty {
                ahead.append(id)
                return true
            }
            waiting.append((id, priority, asked))
            asked += 1
            return false
        }

        mutating func reprioritize(_ id: Int, to priority: ImageLoadPriority) {
            guard let index = waiting.firstIndex(where: { $0.id == id }) else { return }
            waiting[index].priority = priority
        }

        mutating func finished(_ id: Int) -> [Int] {
            guard let index = ahead.firstIndex(of: id) else { return [] }
            ahead.remove(at: index)
            return admit()
        }

        mutating func withdraw(_ id: Int) -> Bool {
            guard let index = waiting.firstIndex(where: { $0.id == id }) else { return false }
            waiting.remove(at: index)
            return true
        }

        mutating func setLimit(_ newLimit: Int) -> [Int] {
            limit = max(1, newLimit)
            return admit()
        }

        private mutating func admit() -> [Int] {
            var admitted: [Int] = []
            while ahead.count < limit, !waiting.isEmpty {
                let next = waiting.indices.min { lhs, rhs in
                    (waiting[lhs].priority, waiting[rhs].order) > (waiting[rhs].priority, waiting[lhs].order)
                }!
                let id = waiting.remove(at: next).id
                ahead.append(id)
                admitted.append(id)
            }
            return admitted
        }
    }

    @Test("the state machine answers as the plain reference over random events (seed printed)")
    func matchesTheReference() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("DownloadAdmissionTests seed \(seed)")
        var random = SplitMix64(seed: seed)
        var steps = 0
        var reordered = 0
        for _ in 0..<200 {
            let limit = Int.random(in: 1...4, using: &random)
            var machine = DownloadAdmissionState<Int>(limit: limit)
            var reference = Reference(limit: limit)
            var nextID = 0
            for _ in 0..<200 {
                steps += 1
                let priority = ImageLoadPriority.allCases.randomElement(using: &random)!
                switch Int.random(in: 0..<12, using: &random) {
                case 0..<4:
                    #expect(
                        machine.request(nextID, priority: priority) == reference.request(nextID, priority: priority),
                        "seed \(seed)")
                    nextID += 1
                case 4..<7:
                    let id = Int.random(in: 0...max(0, nextID), using: &random)
                    let admitted = machine.finished(id)
                    #expect(admitted == reference.finished(id), "seed \(seed)")
                    if admitted.count > 1 && admitted != admitted.sorted() { reordered += 1 }
                case 7..<9:
                    let id = Int.random(in: 0...max(0, nextID), using: &random)
                    #expect(machine.withdraw(id) == reference.withdraw(id), "seed \(seed)")
                case 9..<11:
                    let id = Int.random(in: 0...max(0, nextID), using: &random)
                    machine.reprioritize(id, to: priority)
                    reference.reprioritize(id, to: priority)
                default:
                    let newLimit = Int.random(in: 0...5, using: &random)
                    let admitted = machine.setLimit(newLimit)
                    #expect(admitted == reference.setLimit(newLimit), "seed \(seed)")
                    if admitted.count > 1 && admitted != admitted.sorted() { reordered += 1 }
                }
                #expect(machine.ahead == Set(reference.ahead), "seed \(seed)")
                #expect(machine.waitingCount == reference.waiting.count, "seed \(seed)")
            }
        }
        print("DownloadAdmissionTests: \(steps) events checked, \(reordered) admissions out of asking order")
        // Priorities must have reordered admissions, or the comparison proved nothing about them.
        #expect(reordered > 10, "seed \(seed)")
    }

    @Test("a download whose fetch ended while it waited never starts, and no place stays taken")
    func releasedWhileWaiting() {
        let admission = DownloadAdmission(limit: 1)
        let started = Locked<[Int]>([])
        let ended = Locked(0)
        func start(_ id: Int) -> @Sendable () -> (any ImageOperation)? {
            {
                started.withLock { $0.append(id) }
                return nil
            }
        }
        let first = admission.admit(start(1), cancelledWhileWaiting: {})
        let second = admission.admit(start(2), cancelledWhileWaiting: { ended.withLock { $0 += 1 } })
        #expect(started.value == [1] && admission.waitingCount == 1)
        second.release()
        #expect(admission.waitingCount == 0)
        first.release()
        #expect(started.value == [1], "a released download started")
        #expect(admission.aheadCount == 0 && admission.waitingCount == 0)
        // Cancelling it afterwards changes nothing (its fetch already ended).
        second.cancel()
        #expect(ended.value == 0 && admission.aheadCount == 0)
        // And a third one is admitted at once.
        let third = admission.admit(start(3), cancelledWhileWaiting: {})
        #expect(started.value == [1, 3])
        third.release()
        #expect(admission.aheadCount == 0)
    }

    @Test("with one download allowed ahead, the next starts only when the first's decode starts")
    func theNextDownloadWaitsForTheDecode() async throws {
        // Its own pool: held decodes must not hold the shared pool's threads from other tests.
        let rig = Rig(workPool: WorkPool(label: "admission-test", maxConcurrent: 2))
        rig.manager.maxDownloadsAheadOfDecoding = 1
        let urls = (0..<3).map { testURL("ahead\($0)") }
        for url in urls { rig.serve(url) }
        rig.loader.hold()
        rig.coder.holdDecodes()
        let recorders = urls.map { _ in DeliveryRecorder() }
        for (url, recorder) in zip(urls, recorders) {
            rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        }
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(rig.loader.requestCount == 1, "a second download started while the first was ahead")
        // From now on every download answers at once, and every decode that starts is held: the later downloads
        // still start, each once the decode of the one ahead of it started (never more than one ahead).
        rig.loader.releaseAll()
        #expect(await waitUntil { rig.loader.requestCount == 3 })
        #expect(await waitUntil { rig.coder.decodeCount == 2 })
        #expect(rig.manager.downloadAdmission.aheadCount == 1, "the third download, its decode waiting for a thread")
        rig.coder.releaseDecodes()
        for recorder in recorders { #expect(await recorder.waitForFinal()?.value != nil) }
        #expect(rig.loader.requestCount == 3)
        #expect(await waitUntil { !rig.manager.isRunning }, "a download kept its place after its load ended")
    }

    @Test("a load cancelled while its download waits for admission ends at once and never reaches the loader")
    func cancelWhileWaiting() async throws {
        let rig = Rig()
        rig.manager.maxDownloadsAheadOfDecoding = 1
        let first = testURL("first")
        let second = testURL("second")
        rig.serve(first)
        rig.serve(second)
        rig.loader.hold()
        let firstRecorder = DeliveryRecorder()
        let secondRecorder = DeliveryRecorder()
        rig.manager.loadImage(with: first, context: rig.context(), completed: firstRecorder.handler)
        let waiting = rig.manager.loadImage(with: second, context: rig.context(), completed: secondRecorder.handler)
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        waiting.cancel()
        #expect(await secondRecorder.waitForFinal(timeout: 5)?.error?.code == .cancelled)
        rig.loader.releaseAll()
        #expect(await firstRecorder.waitForFinal()?.value != nil)
        #expect(rig.loader.requestCount(for: second) == 0)
        #expect(await waitUntil { !rig.manager.isRunning })
    }

    @Test("waiting downloads start by priority, a raised priority included, and in asking order within one")
    func waitingDownloadsStartByPriority() async throws {
        let rig = Rig()
        rig.manager.maxDownloadsAheadOfDecoding = 1
        let names = ["first", "low", "normal", "high", "raised", "normal2"]
        let urls = Dictionary(uniqueKeysWithValues: names.map { ($0, testURL("priority-\($0)")) })
        for url in urls.values { rig.serve(url) }
        rig.loader.hold()
        let options: [String: ImageOptions] = [
            "low": .lowPriority, "high": .highPriority, "raised": .lowPriority,
        ]
        var recorders: [DeliveryRecorder] = []
        var operations: [String: ImageLoadOperation] = [:]
        for name in names {
            let recorder = DeliveryRecorder()
            recorders.append(recorder)
            operations[name] = rig.manager.loadImage(
                with: urls[name]!, options: options[name] ?? [], context: rig.context(), completed: recorder.handler)
            // One at a time, so the order they ask for a download in is the order of this list.
            let waiting = operations.count - 1
            #expect(
                await waitUntil {
                    rig.loader.requestCount == 1 && rig.manager.downloadAdmission.waitingCount == waiting
                })
        }
        // A prefetch the caller now needs at once: it waits at high priority, after the high load that asked first.
        operations["raised"]!.priority = .high
        rig.loader.releaseAll()
        for recorder in recorders { #expect(await recorder.waitForFinal()?.value != nil) }
        let order = rig.loader.requests.map { request in names.first { urls[$0] == request.url } ?? "?" }
        #expect(order == ["first", "high", "raised", "normal", "normal2", "low"])
        #expect(await waitUntil { !rig.manager.isRunning })
    }

    @Test("a failed download gives its place back; raising the limit starts waiting downloads at once")
    func failuresAndLimitChanges() async throws {
        let rig = Rig()
        rig.manager.maxDownloadsAheadOfDecoding = 1
        let missing = testURL("missing")
        rig.loader.set(.failure(ImageError(.invalidDownloadStatusCode, stage: .download, message: "404")), for: missing)
        let urls = (0..<3).map { testURL("after\($0)") }
        for url in urls { rig.serve(url) }
        rig.loader.hold()
        let failed = DeliveryRecorder()
        rig.manager.loadImage(with: missing, context: rig.context(), completed: failed.handler)
        let recorders = urls.map { _ in DeliveryRecorder() }
        for (url, recorder) in zip(urls, recorders) {
            rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
        }
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        rig.manager.maxDownloadsAheadOfDecoding = 3
        #expect(await waitUntil { rig.loader.requestCount == 3 })
        rig.loader.releaseAll()
        #expect(await failed.waitForFinal()?.error != nil)
        #expect(await waitUntil { rig.loader.requestCount == 4 })
        rig.loader.releaseAll()
        for recorder in recorders { #expect(await recorder.waitForFinal()?.value != nil) }
        #expect(await waitUntil { !rig.manager.isRunning })
    }
}
