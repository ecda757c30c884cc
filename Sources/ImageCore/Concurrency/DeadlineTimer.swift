import Dispatch
import Foundation

/// Fires the deadlines of loads (``ImageContext/loadTimeout``) on a thread of its own.
///
/// Why not a dispatch timer: on Linux, libdispatch delivers timers through its shared thread pool, as many threads
/// as cores, so while CPU-bound work dispatched anywhere in the process keeps those threads busy, a timer fires only
/// when one of them frees up — a 0.1 s deadline ended its load after 6 s (`LoadTimeoutTests`), and a queue of the
/// SDK's own did not help. A plain thread waiting on a condition is woken by the kernel when it is due.
///
/// A min-heap of deadlines, each holding its operation weakly. A load that finishes removes its entry
/// (``remove(_:)``), so the heap holds the loads in flight with a deadline, not every deadline set in the last
/// timeout. The thread starts with the first deadline and exits after
/// ``idleTimeout`` seconds with none. Expiring runs on that thread: with ``CallbackQueue/current`` the load's
/// completion runs there too, so a completion that takes long delays the deadlines behind it (give such loads a
/// callback queue). Thread-safe: one `NSCondition` guards the heap.
final class DeadlineTimer: @unchecked Sendable {
    /// The timer every manager uses.
    static let shared = DeadlineTimer()

    /// Seconds the thread waits without a deadline before it exits.
    static let idleTimeout = 10.0

    /// A scheduled deadline, for ``remove(_:)``.
    struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        /// When it is due, in `DispatchTime` uptime nanoseconds.
        let due: UInt64
        let id: UInt64
        weak var operation: ImageLoadOperation?
    }

    private let condition = NSCondition()
    /// A binary min-heap on `due`.
    private var heap: [Entry] = []
    /// Each entry's index in `heap`, by id (kept in step by every move).
    private var index: [UInt64: Int] = [:]
    private var nextID: UInt64 = 0
    private var threadRunning = false

    /// The deadlines waiting, finished loads' removed (for tests).
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return heap.count
    }

    /// Expires `operation` once `seconds` passed (now, for zero or less).
    func schedule(_ operation: ImageLoadOperation, after seconds: Double) -> Token {
        let now = DispatchTime.now().uptimeNanoseconds
        let delay = UInt64(min(max(0, seconds), 1e9) * 1e9)
        condition.lock()
        nextID &+= 1
        let id = nextID
        push(Entry(due: now &+ delay, id: id, operation: operation))
        let start = !threadRunning
        threadRunning = true
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "webimage.load-deadlines"
            thread.start()
        }
        return Token(id: id)
    }

    /// Forgets a deadline whose load finished; nothing when it already fired.
    func remove(_ token: Token) {
        condition.lock()
        defer { condition.unlock() }
        guard let position = index[token.id] else { return }
        remove(at: position)
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
            let operation = remove(at: 0).operation
            condition.unlock()
            operation?.expire()
            condition.lock()
        }
    }

    // MARK: Heap (callers hold the lock)

    private func push(_ entry: Entry) {
        heap.append(entry)
        index[entry.id] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Removes the entry at `position`: the last entry takes its place and moves up or down to where it belongs.
    @discardableResult
    private func remove(at position: Int) -> Entry {
        let removed = heap[position]
        index[removed.id] = nil
        let last = heap.removeLast()
        if position < heap.count {
            heap[position] = last
            index[last.id] = position
            siftDown(siftUp(position))
        }
        return removed
    }

    /// Moves the entry at `start` towards the root while it is due before its parent; returns where it ended.
    @discardableResult
    private func siftUp(_ start: Int) -> Int {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            swap(child, parent)
            child = parent
        }
        return child
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
            if smallest == parent { return }
            swap(parent, smallest)
            parent = smallest
        }
    }

    private func swap(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        index[heap[a].id] = a
        index[heap[b].id] = b
    }
}
