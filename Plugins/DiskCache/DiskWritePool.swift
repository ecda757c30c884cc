import Foundation
import ImageCore

/// The dedicated threads that run a ``DiskCache``'s asynchronous writes: at most `maxThreads` at once, started
/// on demand, ended after ``idleTimeout`` seconds without work; never the Swift cooperative pool nor Dispatch's
/// shared workers.
///
/// Why not ImageCore's `WorkPool`: it starts a thread only when no thread is idle, so two jobs submitted back
/// to back while one thread sleeps run one after the other on that thread (the second waits for the first);
/// for file writes that defeats the point of a pool. Here a thread starts whenever queued jobs outnumber idle
/// threads.
///
/// Threading: `submit` from any thread; jobs run in FIFO order of submission, up to `maxThreads` at a time.
final class DiskWritePool: @unchecked Sendable {
    // @unchecked Sendable: `jobs`, `threads` and `idle` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs = FIFOQueue<@Sendable () -> Void>()
    private var threads = 0
    private var idle = 0

    let maxThreads: Int
    private let label: String

    /// Seconds an idle thread waits for work before it ends.
    static let idleTimeout: TimeInterval = 10

    init(label: String, maxThreads: Int) {
        self.label = label
        self.maxThreads = max(1, maxThreads)
    }

    /// Runs `job` on a pool thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        let waiting = jobs.count
        let spawn = waiting > idle && threads < maxThreads
        if spawn { threads += 1 }
        condition.signal()
        condition.unlock()
        guard spawn else { return }
        let thread = Thread { [self] in run() }
        thread.name = label
        thread.qualityOfService = .utility
        thread.start()
    }

    private func run() {
        // A thread keeps its spawner's name in the kernel otherwise (see `WorkPool.nameCurrentThread`).
        WorkPool.nameCurrentThread(label)
        condition.lock()
        while true {
            while jobs.isEmpty {
                idle += 1
                let signalled = condition.wait(until: Date().addingTimeInterval(Self.idleTimeout))
                idle -= 1
                if !signalled && jobs.isEmpty {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            // Non-nil: the loop above waited until a job was queued.
            let job = jobs.popFirst()!
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
