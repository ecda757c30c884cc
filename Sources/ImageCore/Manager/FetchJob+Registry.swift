import Foundation

/// A job and the manager's registry of running jobs: when it is finished, and what waits for it to leave.
extension FetchJob {
    /// True once every subscriber was served or left (the registry forgets the job soon after).
    var isFinished: Bool { state.withLock { $0.machine.isFinished } }

    /// Runs `body` once this finished job left the manager's registry; false (and `body` is dropped) when it already
    /// left or has not finished: the caller looks again itself.
    func afterRemoval(_ body: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.machine.isFinished, !state.forgotten else { return false }
            state.afterRemoval.append(body)
            return true
        }
    }

    /// The job left the registry: what waited for that runs (outside the lock).
    func forgotten() {
        let waiting = state.withLock { state in
            state.forgotten = true
            defer { state.afterRemoval = [] }
            return state.afterRemoval
        }
        for body in waiting { body() }
    }
}
