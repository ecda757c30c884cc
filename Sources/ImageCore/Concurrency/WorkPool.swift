import Foundation

/// A bounded pool of dedicated threads for blocking work (decoding, encoding, transforming, file I/O).
///
/// Work never runs on Swift's cooperative pool nor on Dispatch's shared worker threads (whose width on Linux is
/// the core count, so blocking there would starve every other queue). At most `maxConcurrent` jobs run at once;
/// the rest wait in a FIFO without holding a thread. Threads start on demand and exit after ``idleTimeout``
/// seconds without work. Thread-safe.
public final class WorkPool: @unchecked Sendable {
    // @unchecked Sendable: every mutable field below is only touched while `condition` is locked.
    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0

    /// The most jobs that run at once.
    public let maxConcurrent: Int
    private let label: String
    private let qualityOfService: QualityOfService

    /// The pool for CPU work, sized to the active processor count.
    public static let cpu = WorkPool(label: "image.cpu", maxConcurrent: ProcessInfo.processInfo.activeProcessorCount)

    /// The pool for blocking file I/O (file loader, disk caches that have no queue of their own).
    public static let io = WorkPool(label: "image.io", maxConcurrent: 4, qos: .utility)

    /// Creates a pool.
    public init(label: String, maxConcurrent: Int, qos: QualityOfService = .userInitiated) {
        self.label = label
        self.maxConcurrent = max(1, maxConcurrent)
        self.qualityOfService = qos
    }

    /// Number of jobs waiting for a thread.
    public var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - head
    }

    /// Runs `job` on a pool thread when one is free.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(job)
        let spawn = idle == 0 && threads < maxConcurrent
        if spawn { threads += 1 }
        condition.signal()
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in workerLoop() }
            thread.name = label
            thread.qualityOfService = qualityOfService
            thread.start()
        }
    }

    /// Runs `body` on the pool and returns its result to an async caller.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Seconds an idle thread waits for work before it exits.
    public static let idleTimeout: TimeInterval = 10

    private func workerLoop() {
        while true {
            condition.lock()
            while head == queue.count {
                idle += 1
                let signalled = condition.wait(until: Date().addingTimeInterval(Self.idleTimeout))
                idle -= 1
                if !signalled && head == queue.count {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let job = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job()
        }
    }
}
