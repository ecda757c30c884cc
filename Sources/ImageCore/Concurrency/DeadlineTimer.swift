import Dispatch
import Foundation

/// Fires the deadlines of loads (``ImageContext/loadTimeout``) on a thread of its own.
///
/// Why not a dispatch timer: on Linux, libdispatch delivers timers through its shared thread pool, as many threads
/// as cores, so while CPU-bound work dispatched anywhere in the process keeps those threads busy, a timer fires only
/// when one of them frees up — a 0.1 s deadline ended its load after 6 s (`LoadTimeoutTests`), and a queue of the
/// SDK's own did not help. A plain thread waiting on a condition is woken by the kernel when it is due.
///
/// A min-heap of deadlines, each holding its operation weakly (a load that finished and was let go is not kept for
/// its deadline; its entry fires as a no-op). The thread starts with the first deadline and exits after
/// ``idleTimeout`` seconds with none. Expiring runs on that thread: with ``CallbackQueue/current`` the load's
/// completion runs there too, so a completion that takes long delays the deadlines behind it (give such loads a
/// callback queue). Thread-safe: one `NSCondition` guards the heap.
final class DeadlineTimer: @unchecked Sendable {
    /// The timer every manager uses.
    static let shared = DeadlineTimer()

    /// Seconds the thread waits without a deadline before it exits.
    static let idleTimeout = 10.0

    private struct Entry {
        /// When it is due, in `DispatchTime` uptime nanoseconds.
        let due: UInt64
        weak var operation: ImageLoadOperation?
    }

    private let condition = NSCondition()
    /// A binary min-heap on `due`.
    private var heap: [Entry] = []
    private var threadRunning = false

    /// Expires `operation` once `seconds` passed (now, for zero or less).
    func schedule(_ operation: ImageLoadOperation, after seconds: Double) {
        let now = DispatchTime.now().uptimeNanoseconds
        let delay = UInt64(min(max(0, seconds), 1e9) * 1e9)
        condition.lock()
        push(Entry(due: now &+ delay, operation: operation))
        let start = !threadRunning
        threadRunning = true
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "webimage.load-deadlines"
            thread.start()
        }
    }

    private func run() {
        condition.lock()
        while true {
            guard let first = heap.first else {
                let woken = condition.wait(until: Date(timeIntervalSinceNow: Self.idleTimeout))
                if !woken && heap.isEmpty {
                    threadRunning = false
                    condition.unlock()
                    return
                }
                continue
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if first.due > now {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.due - now) / 1e9))
                continue
            }
            let operation = popFirst().operation
            condition.unlock()
            operation?.expire()
            condition.lock()
        }
    }

    // MARK: Heap (callers hold the lock)

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func popFirst() -> Entry {
        let first = heap[0]
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
            if smallest == parent { return first }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
