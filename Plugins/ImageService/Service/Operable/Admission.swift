import Synchronization

/// The admission rules of the worker pool, as a pure state machine: at most `workers` run, at most `queueLimit`
/// wait in arrival order, and the rest are refused (the server answers 429).
///
/// Events in (``arrive(_:)``, ``leave(_:)``, ``finish()``), decisions out; no I/O, no clock. Value type.
struct AdmissionState: Sendable, Equatable {
    /// What happens to an arrival.
    enum Decision: Sendable, Equatable {
        /// Run now.
        case run
        /// Wait in the queue.
        case wait
        /// Refuse: workers busy and the queue full.
        case reject
    }

    let workers: Int
    let queueLimit: Int
    private(set) var running = 0
    private(set) var waiting: [Int] = []

    init(workers: Int, queueLimit: Int) {
        self.workers = max(1, workers)
        self.queueLimit = max(0, queueLimit)
    }

    /// Work `id` asks for a worker.
    mutating func arrive(_ id: Int) -> Decision {
        if running < workers && waiting.isEmpty {
            running += 1
            return .run
        }
        guard waiting.count < queueLimit else { return .reject }
        waiting.append(id)
        return .wait
    }

    /// Waiting work `id` gave up (deadline, cancel); false when it was no longer waiting (it was just started).
    mutating func leave(_ id: Int) -> Bool {
        guard let index = waiting.firstIndex(of: id) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// Running work ended: the next waiting one (now running) to start, if any.
    mutating func finish() -> Int? {
        guard !waiting.isEmpty else {
            running -= 1
            return nil
        }
        return waiting.removeFirst()
    }
}

/// A bounded worker pool in front of the expensive work (fetching a source and rendering it): the locked shell
/// of ``AdmissionState``.
///
/// ``withWorker(_:)`` runs its body holding a worker; it waits in the queue when all are busy, and throws
/// ``Overloaded`` at once when the queue is full too. A waiter whose task is cancelled leaves the queue, and a
/// worker whose task is cancelled is given back at once. Every origin byte the service fetches is fetched by a
/// body holding a worker, so origin transfers in flight never exceed the worker count.
/// Thread-safe: one `Mutex`; continuations are resumed outside it.
final class WorkerPool: Sendable {
    /// The pool and its queue are full.
    struct Overloaded: Error {}

    private struct State {
        var machine: AdmissionState
        var nextID = 0
        var continuations: [Int: CheckedContinuation<Void, any Error>] = [:]
        var startedEarly: Set<Int> = []
        var cancelledEarly: Set<Int> = []
    }

    private let state: Mutex<State>
    private let onChange: @Sendable (_ running: Int, _ waiting: Int) -> Void

    /// Creates a pool of `workers` with a queue of `queueLimit`; `onChange` is told the counts after each change
    /// (outside the lock).
    init(workers: Int, queueLimit: Int, onChange: @escaping @Sendable (Int, Int) -> Void = { _, _ in }) {
        state = Mutex(State(machine: AdmissionState(workers: workers, queueLimit: queueLimit)))
        self.onChange = onChange
    }

    /// Workers busy and work waiting now.
    var counts: (running: Int, waiting: Int) {
        state.withLock { ($0.machine.running, $0.machine.waiting.count) }
    }

    /// Runs `body` holding a worker.
    ///
    /// - Throws: ``Overloaded`` when refused, `CancellationError` when cancelled while waiting, or what `body`
    ///   throws.
    func withWorker<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let (id, decision) = state.withLock { state in
            defer { state.nextID += 1 }
            return (state.nextID, state.machine.arrive(state.nextID))
        }
        report()
        switch decision {
        case .reject:
            throw Overloaded()
        case .wait:
            try await waitForTurn(id)
        case .run:
            break
        }
        // The worker is given back when the body ends or when the task is cancelled (its deadline passed),
        // whichever comes first: a body still winding down (a C decoder mid-image, a transfer being torn down)
        // must not keep the next request waiting.
        let lease = Lease { self.finish() }
        return try await withTaskCancellationHandler {
            defer { lease.release() }
            return try await body()
        } onCancel: {
            lease.release()
        }
    }

    /// Gives a worker back once.
    private final class Lease: Sendable {
        private let released = Atomic<Bool>(false)
        private let onRelease: @Sendable () -> Void

        init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }

        func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            onRelease()
        }
    }

    private func waitForTurn(_ id: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Result<Void, any Error>? in
                    if state.startedEarly.remove(id) != nil { return .success(()) }
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if Task.isCancelled, state.machine.leave(id) { return .failure(CancellationError()) }
                    state.continuations[id] = continuation
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard state.machine.leave(id) else { return nil }
                guard let continuation = state.continuations.removeValue(forKey: id) else {
                    state.cancelledEarly.insert(id)  // it finds this when it registers
                    return nil
                }
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
            report()
        }
    }

    private func finish() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard let id = state.machine.finish() else { return nil }
            guard let continuation = state.continuations.removeValue(forKey: id) else {
                // Chosen before it registered its continuation: it finds this when it does.
                state.startedEarly.insert(id)
                return nil
            }
            return continuation
        }
        next?.resume()
        report()
    }

    private func report() {
        let (running, waiting) = counts
        onChange(running, waiting)
    }
}
