import Foundation
import Dispatch
import Synchronization

/// A bounded pool for blocking work (decoding, encoding, transforming, file I/O).
///
/// Work runs on Dispatch threads, never on Swift's cooperative pool, and at most `maxConcurrent` jobs run at
/// once; the rest wait in a FIFO without holding a thread (so 200 slow decodes take 2 threads, not 200).
/// Thread-safe.
public final class WorkPool: Sendable {
    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var running = 0
    }

    /// The most jobs that run at once.
    public let maxConcurrent: Int
    private let label: String
    private let dispatchQueue: DispatchQueue
    private let state = Mutex(State())

    /// The pool for CPU work, sized to the active processor count.
    public static let cpu = WorkPool(label: "image.cpu", maxConcurrent: ProcessInfo.processInfo.activeProcessorCount)

    /// The pool for blocking file I/O (file loader, disk caches that have no queue of their own).
    public static let io = WorkPool(label: "image.io", maxConcurrent: 4, qos: .utility)

    /// Creates a pool.
    public init(label: String, maxConcurrent: Int, qos: DispatchQoS = .userInitiated) {
        self.label = label
        self.maxConcurrent = max(1, maxConcurrent)
        self.dispatchQueue = DispatchQueue(label: label, qos: qos, attributes: .concurrent)
    }

    /// Number of jobs waiting for a slot.
    public var pendingCount: Int { state.withLock { $0.queue.count - $0.head } }

    /// Runs `job` when a slot is free.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        let startWorker = state.withLock { state -> Bool in
            state.queue.append(job)
            if state.running < maxConcurrent {
                state.running += 1
                return true
            }
            return false
        }
        if startWorker { dispatchQueue.async { self.drain() } }
    }

    /// Runs `body` on the pool and returns its result to an async caller.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    private func drain() {
        while let job = next() { job() }
    }

    private func next() -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard state.head < state.queue.count else {
                state.running -= 1
                state.queue.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            let job = state.queue[state.head]
            state.head += 1
            if state.head > 1024 && state.head * 2 > state.queue.count {
                state.queue.removeFirst(state.head)
                state.head = 0
            }
            return job
        }
    }
}
