import Testing

@_spi(Fuzzing) @testable import DiskCache

/// The write scheduler alone: lanes, barriers and the backlog bound, with no files and no threads.
@Suite("DiskWriteScheduler (pure)")
struct DiskWriteSchedulerTests {
    typealias Scheduler = DiskWriteScheduler<String, String>

    static func started(_ submission: Scheduler.Submission) -> Scheduler.Job? {
        if case .start(let job) = submission { return job }
        return nil
    }

    static func queued(_ submission: Scheduler.Submission) -> Scheduler.Job? {
        if case .queued(let job) = submission { return job }
        return nil
    }

    @Test("different entries start at once; one entry's jobs run one at a time, in submission order")
    func lanes() throws {
        var scheduler = Scheduler(maxBacklogJobs: 100, maxBacklogBytes: 1 << 20)
        let a1 = try #require(Self.started(scheduler.submit(lane: "a", inline: false, cost: 10, work: "a1")))
        let b1 = try #require(Self.started(scheduler.submit(lane: "b", inline: false, cost: 10, work: "b1")))
        let a2 = try #require(Self.queued(scheduler.submit(lane: "a", inline: false, cost: 10, work: "a2")))
        let a3 = try #require(Self.queued(scheduler.submit(lane: "a", inline: true, work: "a3")))
        #expect(scheduler.backlogJobs == 3 && scheduler.backlogBytes == 30)
        #expect(scheduler.finish(b1).isEmpty)
        #expect(scheduler.finish(a1).map(\.work) == ["a2"])
        #expect(scheduler.finish(a2).map(\.work) == ["a3"])
        #expect(scheduler.finish(a3).isEmpty)
        #expect(scheduler.isIdle)
        #expect(scheduler.backlogJobs == 0 && scheduler.backlogBytes == 0)
        _ = a3
    }

    @Test("a barrier runs after every earlier job and before every later one")
    func barrier() throws {
        var scheduler = Scheduler(maxBacklogJobs: 100, maxBacklogBytes: 1 << 20)
        let a = try #require(Self.started(scheduler.submit(lane: "a", inline: false, cost: 1, work: "a")))
        let b = try #require(Self.started(scheduler.submit(lane: "b", inline: false, cost: 1, work: "b")))
        let clear = try #require(Self.queued(scheduler.submit(lane: nil, inline: false, work: "clear")))
        // Submitted after the barrier: waits, even on an idle lane.
        _ = try #require(Self.queued(scheduler.submit(lane: "c", inline: false, cost: 1, work: "c")))
        _ = try #require(Self.queued(scheduler.submit(lane: "a", inline: false, cost: 1, work: "a-after")))
        #expect(scheduler.finish(a).isEmpty)
        #expect(scheduler.finish(b).map(\.work) == ["clear"])
        let released = scheduler.finish(clear)
        #expect(Set(released.map(\.work)) == ["c", "a-after"])
        for job in released { _ = scheduler.finish(job) }
        #expect(scheduler.isIdle)
    }

    @Test("consecutive barriers run one after the other; an idle scheduler starts a barrier at once")
    func barriers() throws {
        var scheduler = Scheduler(maxBacklogJobs: 100, maxBacklogBytes: 1 << 20)
        let first = try #require(Self.started(scheduler.submit(lane: nil, inline: false, work: "sweep1")))
        let second = try #require(Self.queued(scheduler.submit(lane: nil, inline: true, work: "sweep2")))
        let job = try #require(Self.queued(scheduler.submit(lane: "a", inline: false, cost: 1, work: "a")))
        #expect(scheduler.finish(first).map(\.work) == ["sweep2"])
        #expect(scheduler.finish(second).map(\.work) == ["a"])
        #expect(scheduler.finish(job).isEmpty)
        #expect(scheduler.isIdle)
    }

    @Test("asynchronous stores beyond the job count or the byte budget are rejected; others never")
    func backlogBound() throws {
        var scheduler = Scheduler(maxBacklogJobs: 3, maxBacklogBytes: 1000)
        // The first store fits whatever its size.
        let big = try #require(Self.started(scheduler.submit(lane: "big", inline: false, cost: 5000, work: "big")))
        guard case .rejected = scheduler.submit(lane: "x", inline: false, cost: 1, work: "x") else {
            Issue.record("a store over the byte budget was taken")
            return
        }
        _ = scheduler.finish(big)
        _ = try #require(Self.started(scheduler.submit(lane: "a", inline: false, cost: 600, work: "a")))
        guard case .rejected = scheduler.submit(lane: "b", inline: false, cost: 500, work: "b") else {
            Issue.record("600 + 500 bytes fit a 1000-byte budget")
            return
        }
        _ = try #require(Self.started(scheduler.submit(lane: "b", inline: false, cost: 400, work: "b")))
        #expect(scheduler.backlogBytes == 1000)
        // Full by count now: a store is rejected, a removal (cost 0) and an inline store are taken.
        _ = try #require(Self.started(scheduler.submit(lane: "r", inline: false, work: "remove")))
        guard case .rejected = scheduler.submit(lane: "c", inline: false, cost: 1, work: "c") else {
            Issue.record("a fourth job was taken with a bound of 3")
            return
        }
        _ = try #require(Self.started(scheduler.submit(lane: "d", inline: true, cost: 1, work: "inline")))
        #expect(scheduler.backlogJobs == 3)
    }

    @Test("random schedules: per-lane order, one job per lane, barriers alone, everything runs, nothing leaks")
    func randomSchedules() {
        var random = SplitMix(seed: 42)
        for _ in 0..<300 {
            var scheduler = Scheduler(maxBacklogJobs: 6, maxBacklogBytes: 400)
            var running: [Scheduler.Job] = []
            var submittedPerLane: [String: [UInt64]] = [:]
            var startedPerLane: [String: [UInt64]] = [:]
            var barrierEpochsStarted: [UInt64] = []
            var submitted = 0
            var completed = 0
            func record(_ job: Scheduler.Job) {
                if let lane = job.lane {
                    #expect(!running.contains { $0.lane == lane }, "two jobs of lane \(lane) at once")
                    #expect(!running.contains { $0.isBarrier }, "a job ran beside a barrier")
                    startedPerLane[lane, default: []].append(job.id)
                } else {
                    #expect(running.isEmpty, "a barrier started beside other jobs")
                    barrierEpochsStarted.append(job.epoch)
                }
                running.append(job)
            }
            for _ in 0..<200 {
                if running.isEmpty || random.next() % 3 != 0 {
                    let roll = random.next() % 10
                    let lane: String? = roll == 0 ? nil : "k\(random.next() % 4)"
                    let inline = roll == 1
                    let cost = lane == nil || roll == 2 ? 0 : Int(random.next() % 150) + 1
                    switch scheduler.submit(lane: lane, inline: inline, cost: cost, work: "") {
                    case .start(let job):
                        submitted += 1
                        if let lane { submittedPerLane[lane, default: []].append(job.id) }
                        record(job)
                    case .queued(let job):
                        submitted += 1
                        if let lane { submittedPerLane[lane, default: []].append(job.id) }
                    case .rejected:
                        #expect(!inline && cost > 0, "only asynchronous stores may be rejected")
                    }
                } else {
                    let index = Int(random.next() % UInt64(running.count))
                    let job = running.remove(at: index)
                    completed += 1
                    for next in scheduler.finish(job) { record(next) }
                }
            }
            while !running.isEmpty {
                let job = running.removeFirst()
                completed += 1
                for next in scheduler.finish(job) { record(next) }
            }
            #expect(completed == submitted)
            #expect(scheduler.isIdle)
            #expect(scheduler.backlogJobs == 0 && scheduler.backlogBytes == 0)
            #expect(startedPerLane == submittedPerLane)
            #expect(barrierEpochsStarted == barrierEpochsStarted.sorted())
        }
    }

    @Test("a fence is released once every job submitted before it settled, and holds no later job up")
    func fence() throws {
        var scheduler = Scheduler(maxBacklogJobs: 100, maxBacklogBytes: 1 << 20)
        #expect(scheduler.fence("idle") == "idle", "nothing pending: released at once")
        let a = try #require(Self.started(scheduler.submit(lane: "a", inline: false, cost: 1, work: "a")))
        let clear = try #require(Self.queued(scheduler.submit(lane: nil, inline: false, work: "clear")))
        #expect(scheduler.fence("f1") == nil)
        // Submitted after the fence; waits for the clear (a barrier), not for the fence.
        let b = try #require(Self.queued(scheduler.submit(lane: "b", inline: false, cost: 1, work: "b")))
        #expect(scheduler.fence("f2") == nil)
        #expect(scheduler.finish(a).map(\.work) == ["clear"])
        #expect(scheduler.settle(a).isEmpty, "the clear submitted before f1 has not settled")
        #expect(scheduler.finish(clear).map(\.work) == ["b"])
        #expect(scheduler.settle(clear) == ["f1"], "f1 does not wait for b")
        #expect(scheduler.waitingFences == 1)
        #expect(scheduler.finish(b).isEmpty)
        #expect(scheduler.settle(b) == ["f2"])
        #expect(scheduler.waitingFences == 0 && scheduler.isIdle)
    }

    @Test("random schedules with fences: each fence is released exactly when the last job submitted before it settles")
    func randomFences() {
        var random = SplitMix(seed: 7)
        var released = 0
        for _ in 0..<300 {
            var scheduler = Scheduler(maxBacklogJobs: 6, maxBacklogBytes: 400)
            var running: [Scheduler.Job] = []
            var finishedNotSettled: [Scheduler.Job] = []
            var unsettledIDs: Set<UInt64> = []
            var lastID: UInt64 = 0
            // Fence name → the job ids it waits for.
            var fences: [String: Set<UInt64>] = [:]
            var fenceCount = 0
            func settle(_ job: Scheduler.Job) {
                unsettledIDs.remove(job.id)
                let expected = fences.filter { $0.value.contains(job.id) && $0.value.isSubset(of: [job.id]) }.keys
                for (name, ids) in fences { fences[name] = ids.subtracting([job.id]) }
                let got = scheduler.settle(job)
                #expect(Set(got) == Set(expected), "fences released by job \(job.id)")
                for name in got { fences[name] = nil }
                released += got.count
            }
            for _ in 0..<200 {
                let roll = random.next() % 12
                if roll < 5 || (running.isEmpty && finishedNotSettled.isEmpty) {
                    let lane: String? = roll == 0 ? nil : "k\(random.next() % 4)"
                    let cost = lane == nil ? 0 : Int(random.next() % 150) + 1
                    switch scheduler.submit(lane: lane, inline: roll == 1, cost: cost, work: "") {
                    case .start(let job):
                        running.append(job)
                        unsettledIDs.insert(job.id)
                        lastID = job.id
                    case .queued(let job):
                        unsettledIDs.insert(job.id)
                        lastID = job.id
                    case .rejected: break
                    }
                } else if roll < 7 {
                    fenceCount += 1
                    let name = "f\(fenceCount)"
                    let waitsFor = unsettledIDs.filter { $0 <= lastID }
                    if let now = scheduler.fence(name) {
                        #expect(now == name && waitsFor.isEmpty)
                        released += 1
                    } else {
                        #expect(!waitsFor.isEmpty)
                        fences[name] = waitsFor
                    }
                } else if roll < 10, !running.isEmpty {
                    let job = running.remove(at: Int(random.next() % UInt64(running.count)))
                    running += scheduler.finish(job)
                    finishedNotSettled.append(job)
                } else if !finishedNotSettled.isEmpty {
                    settle(finishedNotSettled.remove(at: Int(random.next() % UInt64(finishedNotSettled.count))))
                }
            }
            while !running.isEmpty || !finishedNotSettled.isEmpty {
                if let job = running.popLast() {
                    running += scheduler.finish(job)
                    finishedNotSettled.append(job)
                } else {
                    settle(finishedNotSettled.removeFirst())
                }
            }
            #expect(fences.isEmpty && scheduler.waitingFences == 0, "every fence released at the end")
            #expect(scheduler.isIdle)
        }
        #expect(released > 1000, "the schedules made fences (\(released) released)")
    }
}
