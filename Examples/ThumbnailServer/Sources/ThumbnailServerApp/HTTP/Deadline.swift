/// A request's deadline passed before its answer was ready.
struct DeadlineExceeded: Error {}

/// Runs `body` for at most `seconds`; past that the body's task is cancelled and ``DeadlineExceeded`` thrown.
///
/// Work the body shares with other requests (a flight) goes on; only this request stops waiting for it.
func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int64(max(0, seconds) * 1000)))
            throw DeadlineExceeded()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
