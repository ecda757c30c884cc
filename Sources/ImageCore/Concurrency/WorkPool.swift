import Foundation

/// A bounded pool of dedicated threads for blocking work (decoding, encoding, transforming, file I/O).
///
/// Work never runs on Swift's cooperative pool nor on Dispatch's shared worker threads (whose width on Linux is
/// the core count, so blocking there would starve every other queue). At most `maxConcurrent` jobs run at once;
/// the rest wait in a FIFO without holding a thread. Threads start on demand and exit after ``idleTimeout``
/// seconds without work. Thread-safe.
///
/// Three lanes. ``Priority/continuation`` jobs (the rest of work a finished job started: a decoded image's
/// transform and delivery) run first, then ``Priority/normal`` jobs (decodes a caller waits for), then
/// ``Priority/background`` ones (a cache's disk encode, which nobody waits for); background jobs hold at most
/// ``maxBackgroundConcurrent`` threads, so a backlog of encodes can't make a load wait behind it. Continuations go
/// first because they release memory that normal jobs take: behind one FIFO, a burst of 1,000 decodes kept every
/// decoded image (8 MB at 2 MP) alive until the last decode ran, 6 GB at peak.
public final class WorkPool: @unchecked Sendable {
    /// Which lane a job waits in.
    public enum Priority: Sendable {
        /// Work that finishes what a job on the pool started (and frees what it holds): runs before any other.
        case continuation
        /// Work a caller waits for.
        case normal
        /// Work nobody waits for (cache encodes): runs when no normal job waits, on part of the threads.
        case background
    }

    private typealias Lane = FIFOQueue<@Sendable () -> Void>

    // @unchecked Sendable: every mutable field below is only touched while `condition` is locked.
    private let condition = NSCondition()
    private var continuation = Lane()
    private var normal = Lane()
    private var background = Lane()
    private var runningBackground = 0
    private var threads = 0
    private var idle = 0

    /// The most jobs that run at once.
    public let maxConcurrent: Int
    /// The most background jobs that run at once: one thread fewer than ``maxConcurrent`` (at least one).
    public let maxBackgroundConcurrent: Int
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
        self.maxBackgroundConcurrent = max(1, maxConcurrent - 1)
        self.qualityOfService = qos
    }

    /// Number of jobs waiting for a thread, in both lanes.
    public var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return continuation.count + normal.count + background.count
    }

    /// Number of background jobs waiting for a thread.
    public var pendingBackgroundCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return background.count
    }

    /// Runs `job` on a pool thread when one is free (continuations first, background last; see ``Priority``).
    public func submit(priority: Priority = .normal, _ job: @escaping @Sendable () -> Void) {
        condition.lock()
        switch priority {
        case .continuation: continuation.append(job)
        case .normal: normal.append(job)
        case .background: background.append(job)
        }
        let spawn = idle == 0 && threads < maxConcurrent
        if spawn { threads += 1 }
        condition.broadcast()
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

    /// Whether a waiting job may start now. Called with `condition` locked.
    private var hasRunnableJob: Bool {
        continuation.count > 0 || normal.count > 0
            || (background.count > 0 && runningBackground < maxBackgroundConcurrent)
    }

    /// Names the calling thread in the kernel (`/proc/thread-self/comm`, Linux 3.17+); does nothing elsewhere. Every
    /// pool of the package calls it first thing on its threads.
    package static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private func workerLoop() {
        // `Thread.name` does not reach the kernel before the thread runs on Linux, and a thread otherwise keeps
        // the name of the one that spawned it (often an event loop's): profilers then charge decodes to the
        // event loop. The kernel keeps at most 15 bytes (glibc's `pthread_setname_np` is not in Swift's Glibc).
        Self.nameCurrentThread(label)
        while true {
            condition.lock()
            while !hasRunnableJob {
                idle += 1
                let signalled = condition.wait(until: Date().addingTimeInterval(Self.idleTimeout))
                idle -= 1
                if !signalled && !hasRunnableJob {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let isBackground = continuation.count == 0 && normal.count == 0
            // Non-nil: `hasRunnableJob` saw a job in the lane picked.
            let job = (continuation.popFirst() ?? (isBackground ? background.popFirst() : normal.popFirst()))!
            if isBackground { runningBackground += 1 }
            condition.unlock()
            job()
            if isBackground {
                condition.lock()
                runningBackground -= 1
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
