/// The order in which a ``DiskCache``'s write work may run: a pure state machine (no I/O, no locks, no
/// threads), driven by the cache's locked shell and tested alone.
///
/// - **Lanes.** Stores and removals of one entry file (its name is the lane) run one at a time, in submission
///   order, so two stores of one key land in call order. Work on different files runs in parallel: the shell
///   runs every job it is told to start on its write pool (as many threads as cores).
/// - **Barriers.** A clear, a migration, the start-up sweep and the blocking sweeps run alone: after every job
///   submitted before them finished, and before any job submitted after them starts. Jobs are tagged with an
///   epoch; a barrier ends one epoch and opens the next.
/// - **Bounded backlog.** Asynchronous stores count against a job count and a byte budget while they are queued
///   or running; a store that does not fit is rejected (the shell fails it with `cacheFailure`, counts and logs
///   it). The first store always fits, whatever its size. Removals and barriers are never rejected (they are
///   small, and a removal that heals a bad entry must happen); they count towards the job count.
/// - **Blocking callers** (`storeData`, `removeData`, `sweep`, …) submit *inline* jobs: when one may start,
///   the caller runs it on its own thread instead of the pool. Inline jobs are never rejected (the caller
///   waiting is the back-pressure).
///
/// - **Fences.** A fence (``fence(_:)``, what `waitForPendingWrites` waits on) is released once every job
///   submitted before it has *settled* — finished and had its completion run (the shell reports it with
///   ``settle(_:)``). Unlike a barrier it holds nothing up: jobs submitted after it start as they would without it.
///
/// `Work` is what the shell needs to perform a job (a closure, or a waiter to wake); the actions hand it back.
struct DiskWriteScheduler<LaneID: Hashable, Work> {
    /// One unit of write work.
    struct Job {
        let id: UInt64
        /// The entry file; nil for a barrier.
        let lane: LaneID?
        /// Run by the blocking caller that submitted it, not by the pool.
        let inline: Bool
        /// Bytes counted against the backlog budget (asynchronous stores); 0 otherwise.
        let cost: Int
        /// Counted against the backlog (asynchronous jobs).
        let counted: Bool
        let epoch: UInt64
        let work: Work

        var isBarrier: Bool { lane == nil }
    }

    /// What ``submit(lane:inline:cost:work:)`` decided.
    enum Submission {
        /// Start the job now: the caller runs an inline job itself, the shell submits a pool job.
        case start(Job)
        /// The job waits its turn; a later ``finish(_:)`` returns it.
        case queued(Job)
        /// The backlog is full; the job was not recorded.
        case rejected
    }

    private struct Lane {
        var jobs: [Job] = []
        var running = false
    }

    let maxBacklogJobs: Int
    let maxBacklogBytes: Int

    private var lanes: [LaneID: Lane] = [:]
    private var barriers: [Job] = []
    private var barrierRunning = false
    /// Epoch given to new lane jobs; a barrier takes the current epoch and moves it on.
    private var epoch: UInt64 = 0
    /// Lane jobs of this epoch or earlier may start.
    private var openEpoch: UInt64 = 0
    /// Lane jobs submitted and not finished, by epoch.
    private var unfinished: [UInt64: Int] = [:]
    private var nextID: UInt64 = 0

    /// A wait for the jobs submitted before it.
    private struct Fence {
        /// The last job id submitted before the fence.
        let lastID: UInt64
        /// Those jobs not settled yet.
        var remaining: Int
        let work: Work
    }

    /// Jobs submitted and not settled.
    private var unsettled = 0
    /// Fences not released yet, oldest first.
    private var fences: [Fence] = []

    /// Asynchronous jobs queued or running.
    private(set) var backlogJobs = 0
    /// Bytes of asynchronous stores queued or running.
    private(set) var backlogBytes = 0

    init(maxBacklogJobs: Int, maxBacklogBytes: Int) {
        self.maxBacklogJobs = max(1, maxBacklogJobs)
        self.maxBacklogBytes = max(0, maxBacklogBytes)
    }

    /// Jobs running or waiting (tests, metrics).
    var isIdle: Bool { lanes.isEmpty && barriers.isEmpty && !barrierRunning }

    // MARK: Events

    /// Submits a job for entry file `lane`, or a barrier when `lane` is nil.
    ///
    /// `cost` > 0 marks an asynchronous store: it is rejected when the backlog is full.
    mutating func submit(lane: LaneID?, inline: Bool, cost: Int = 0, work: Work) -> Submission {
        let counted = !inline
        if counted && cost > 0 && backlogJobs > 0 {
            let overCount = backlogJobs >= maxBacklogJobs
            let overBytes = cost > maxBacklogBytes - backlogBytes
            if overCount || overBytes { return .rejected }
        }
        nextID &+= 1
        unsettled += 1
        if counted {
            backlogJobs += 1
            backlogBytes += max(0, cost)
        }
        guard let lane else {
            let barrier = Job(
                id: nextID, lane: nil, inline: inline, cost: 0, counted: counted, epoch: epoch, work: work)
            epoch &+= 1
            barriers.append(barrier)
            guard startableBarrier()?.id == barrier.id else { return .queued(barrier) }
            return .start(startBarrier())
        }
        let job = Job(
            id: nextID, lane: lane, inline: inline, cost: max(0, cost), counted: counted, epoch: epoch, work: work)
        unfinished[epoch, default: 0] += 1
        lanes[lane, default: Lane()].jobs.append(job)
        if let started = startLaneHead(lane), started.id == job.id { return .start(job) }
        return .queued(job)
    }

    /// Records that `job` finished; returns the jobs that may start now (in the order to start them).
    mutating func finish(_ job: Job) -> [Job] {
        if job.counted {
            backlogJobs -= 1
            backlogBytes -= job.cost
        }
        var started: [Job] = []
        if let lane = job.lane {
            if var state = lanes[lane], state.jobs.first?.id == job.id {
                state.jobs.removeFirst()
                state.running = false
                lanes[lane] = state.jobs.isEmpty ? nil : state
            }
            let left = (unfinished[job.epoch] ?? 1) - 1
            unfinished[job.epoch] = left > 0 ? left : nil
            if let next = startLaneHead(lane) { started.append(next) }
        } else {
            barrierRunning = false
            if barriers.first?.id == job.id { barriers.removeFirst() }
            openEpoch = job.epoch &+ 1
            for lane in Array(lanes.keys) {
                if let next = startLaneHead(lane) { started.append(next) }
            }
        }
        if startableBarrier() != nil { started.append(startBarrier()) }
        return started
    }

    /// Waits for every job submitted so far to settle: returns `work` when none is left (run it now), else keeps
    /// it for the ``settle(_:)`` that releases it.
    mutating func fence(_ work: Work) -> Work? {
        guard unsettled > 0 else { return work }
        fences.append(Fence(lastID: nextID, remaining: unsettled, work: work))
        return nil
    }

    /// Records that `job` settled: it finished (``finish(_:)``) and its completion ran. Returns the fences it
    /// released, oldest first.
    mutating func settle(_ job: Job) -> [Work] {
        unsettled -= 1
        guard !fences.isEmpty else { return [] }
        var released: [Work] = []
        var index = 0
        while index < fences.count {
            if job.id <= fences[index].lastID {
                fences[index].remaining -= 1
                if fences[index].remaining == 0 {
                    released.append(fences.remove(at: index).work)
                    continue
                }
            }
            index += 1
        }
        return released
    }

    /// Fences waiting (tests).
    var waitingFences: Int { fences.count }

    // MARK: Helpers

    /// Starts the head job of `lane` when it may run; returns it.
    private mutating func startLaneHead(_ lane: LaneID) -> Job? {
        guard var state = lanes[lane], !state.running, let head = state.jobs.first, head.epoch <= openEpoch,
            !barrierRunning
        else { return nil }
        state.running = true
        lanes[lane] = state
        return head
    }

    /// The first waiting barrier when every job before it finished and no barrier runs.
    private func startableBarrier() -> Job? {
        guard !barrierRunning, let barrier = barriers.first, barrier.epoch <= openEpoch,
            (unfinished[barrier.epoch] ?? 0) == 0
        else { return nil }
        return barrier
    }

    private mutating func startBarrier() -> Job {
        barrierRunning = true
        return barriers[0]
    }
}

extension DiskWriteScheduler.Job: Sendable where LaneID: Sendable, Work: Sendable {}
