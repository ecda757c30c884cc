import Synchronization

/// Runs one piece of work per key at a time and hands its outcome to everyone who asked meanwhile.
///
/// The work runs in its own task, not in the first caller's: a caller that gives up (its deadline passed, its
/// client went away) leaves alone — it gets `CancellationError` at once — and the work goes on for the others.
/// When the last caller leaves, the work is cancelled (and the key forgotten): no work outlives every request
/// that wanted it, so the worker it holds is given back at the deadline of the last of them. The key is forgotten
/// when the work ends, before its callers resume, so a later call starts afresh (and finds what the work stored).
///
/// The service's results only: its sources are `ImageManager` data loads, coalesced by the manager; a result is
/// encoded bytes, which no manager product is yet (issue 33's third piece).
///
/// Thread-safe: the table is behind one `Mutex`, and no continuation is resumed and no work is started or
/// cancelled under it.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private final class Flight: Sendable {
        struct Waiters {
            var next = 0
            var continuations: [Int: CheckedContinuation<Value, any Error>] = [:]
            /// Callers that asked and have not left or been answered.
            var callers = 0
            var outcome: Result<Value, any Error>?
            var task: Task<Void, Never>?
            var abandoned = false
        }
        let waiters = Mutex(Waiters())
    }

    private let flights = Mutex<[Key: Flight]>([:])

    init() {}

    /// Keys with work running.
    var count: Int { flights.withLock { $0.count } }

    /// The outcome of `work` for `key`: started now, or joined if it is already running.
    ///
    /// - Parameter joined: told synchronously whether this call joined running work (for counting).
    /// - Throws: what the work threw, or `CancellationError` when the calling task is cancelled first.
    func value(
        for key: Key, joined: (Bool) -> Void = { _ in },
        _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let (flight, isNew) = flights.withLock { flights -> (Flight, Bool) in
            if let running = flights[key], running.waiters.withLock({ !$0.abandoned }) {
                running.waiters.withLock { $0.callers += 1 }
                return (running, false)
            }
            let flight = Flight()
            flight.waiters.withLock { $0.callers = 1 }
            flights[key] = flight
            return (flight, true)
        }
        joined(!isNew)
        if isNew {
            let task = Task {
                let outcome: Result<Value, any Error>
                do {
                    outcome = .success(try await work())
                } catch {
                    outcome = .failure(error)
                }
                self.finish(key, flight, outcome)
            }
            let cancelNow = flight.waiters.withLock { waiters -> Bool in
                waiters.task = task
                return waiters.abandoned
            }
            if cancelNow { task.cancel() }
        }
        return try await wait(for: flight, key: key)
    }

    private func finish(_ key: Key, _ flight: Flight, _ outcome: Result<Value, any Error>) {
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        let continuations = flight.waiters.withLock { waiters in
            waiters.outcome = outcome
            waiters.callers = 0
            defer { waiters.continuations = [:] }
            return Array(waiters.continuations.values)
        }
        for continuation in continuations { continuation.resume(with: outcome) }
    }

    /// A caller left: when it was the last, the work is cancelled and the key forgotten.
    private func leave(_ flight: Flight, key: Key) {
        let task = flight.waiters.withLock { waiters -> Task<Void, Never>? in
            guard waiters.outcome == nil else { return nil }
            waiters.callers -= 1
            guard waiters.callers <= 0 else { return nil }
            waiters.abandoned = true
            return waiters.task
        }
        guard flight.waiters.withLock({ $0.abandoned }) else { return }
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        task?.cancel()
    }

    private func wait(for flight: Flight, key: Key) async throws -> Value {
        let id = flight.waiters.withLock { waiters in
            defer { waiters.next += 1 }
            return waiters.next
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate = flight.waiters.withLock { waiters -> Result<Value, any Error>? in
                    if let outcome = waiters.outcome { return outcome }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    waiters.continuations[id] = continuation
                    return nil
                }
                if let immediate {
                    if case .failure(let error) = immediate, error is CancellationError,
                        flight.waiters.withLock({ $0.outcome == nil })
                    {
                        leave(flight, key: key)
                    }
                    continuation.resume(with: immediate)
                }
            }
        } onCancel: {
            let continuation = flight.waiters.withLock { $0.continuations.removeValue(forKey: id) }
            if let continuation {
                leave(flight, key: key)
                continuation.resume(throwing: CancellationError())
            }
        }
    }
}
