import Foundation
import ImageCore
import Synchronization

/// A request's deadline passed before its answer was ready.
struct DeadlineExceeded: Error {}

/// The one deadline of a request: every stage of its work (queueing, each origin hop, decode, transform,
/// encode, cache lookups) is bounded by it, and the request is answered when it passes, whatever the work does.
struct Deadline: Sendable {
    /// When the request's time is up.
    let instant: ContinuousClock.Instant

    /// A deadline `seconds` from now.
    init(seconds: Double) {
        instant = .now.advanced(by: .nanoseconds(Int64(max(0, min(seconds, 1e9)) * 1e9)))
    }

    init(instant: ContinuousClock.Instant) { self.instant = instant }

    /// Seconds left (0 once passed).
    var remaining: Double {
        let left = instant - .now
        return max(0, Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18)
    }

    var hasPassed: Bool { ContinuousClock.now >= instant }

    /// Runs `body` until the deadline: its result if it ends first, else ``DeadlineExceeded`` at the deadline — not
    /// later. The body runs in a task of its own that is cancelled at the deadline, so everything it holds (a
    /// worker, a queue slot, an origin transfer) is let go by cancellation rather than awaited: a task group would
    /// wait for a body that ignores cancellation, and the answer with it.
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = Race<T>()
        let work = Task { race.finish(with: await Result.capturing { try await body() }) }
        let timer = Task {
            try? await Task.sleep(until: instant, clock: .continuous)
            race.finish(with: .failure(DeadlineExceeded()))
        }
        let outcome = await withTaskCancellationHandler {
            await race.wait()
        } onCancel: {
            race.finish(with: .failure(CancellationError()))
        }
        timer.cancel()
        work.cancel()
        return try outcome.get()
    }
}

/// The first of several outcomes, handed to one waiter. Thread-safe: one `Mutex`; the waiter is resumed outside it.
final class Race<T: Sendable>: Sendable {
    private struct State {
        var outcome: Result<T, any Error>?
        var waiter: CheckedContinuation<Result<T, any Error>, Never>?
    }
    private let state = Mutex(State())

    /// Records `outcome` unless one was recorded already.
    func finish(with outcome: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<T, any Error>, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// The first outcome, when there is one.
    func wait() async -> Result<T, any Error> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<T, any Error>? in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    static func capturing(_ body: () async throws -> Success) async -> Self {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}

/// Waits for callback-based work and stops waiting at cancellation: `start` gets a function to call with the
/// outcome and returns a function that cancels the work (called at most once, outside any lock). The waiter
/// resumes at once on cancellation with `CancellationError`; an outcome that arrives later is dropped.
func cancellableWait<T: Sendable>(
    _ start: (@escaping @Sendable (Result<T, any Error>) -> Void) -> (@Sendable () -> Void)
) async throws -> T {
    let race = Race<T>()
    let cancel = start { race.finish(with: $0) }
    let outcome = await withTaskCancellationHandler {
        await race.wait()
    } onCancel: {
        race.finish(with: .failure(CancellationError()))
    }
    if case .failure(let error) = outcome, error is CancellationError { cancel() }
    return try outcome.get()
}

extension WorkPool {
    /// Runs `body` on the pool for a task that may be cancelled: the caller stops waiting at cancellation, and a job
    /// that has not started by then never runs. A job already running finishes alone (a C decoder can't be
    /// stopped), its result dropped: what outlives a request is at most the one stage it was in.
    func runCancellable<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await cancellableWait { finish in
            let flag = CancelFlag()
            submit {
                guard !flag.isSet else { return finish(.failure(CancellationError())) }
                finish(Result { try body() })
            }
            return { flag.set() }
        }
    }
}

/// A flag set once, read from any thread.
final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
