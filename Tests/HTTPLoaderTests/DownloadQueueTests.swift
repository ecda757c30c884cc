import Testing

@testable import HTTPLoader

/// The admission queue on its own.
@Suite struct DownloadQueueTests {
    @Test func admitsUpToTheLimitThenQueuesFIFO() {
        var queue = DownloadQueue<Int>(maxConcurrent: 2, order: .fifo)
        #expect(queue.enqueue(1, priority: .normal) == true)
        #expect(queue.enqueue(2, priority: .normal) == true)
        #expect(queue.enqueue(3, priority: .normal) == false)
        #expect(queue.enqueue(4, priority: .normal) == false)
        #expect(queue.running == 2)
        #expect(queue.finish() == 3)
        #expect(queue.finish() == 4)
        #expect(queue.finish() == nil)
        #expect(queue.running == 1)
        #expect(queue.finish() == nil)
        #expect(queue.running == 0)
    }

    @Test func lifoStartsTheNewestFirst() {
        var queue = DownloadQueue<Int>(maxConcurrent: 1, order: .lifo)
        _ = queue.enqueue(0, priority: .normal)
        for id in 1...3 { _ = queue.enqueue(id, priority: .normal) }
        #expect([queue.finish(), queue.finish(), queue.finish()] == [3, 2, 1])
    }

    @Test func priorityBeatsOrderAndCanBeRaised() {
        var queue = DownloadQueue<Int>(maxConcurrent: 1, order: .fifo)
        _ = queue.enqueue(0, priority: .normal)
        _ = queue.enqueue(1, priority: .low)
        _ = queue.enqueue(2, priority: .normal)
        _ = queue.enqueue(3, priority: .high)
        _ = queue.enqueue(4, priority: .low)
        queue.raise(4, to: .high)
        queue.raise(3, to: .low)  // never lowers
        #expect([queue.finish(), queue.finish(), queue.finish(), queue.finish()] == [3, 4, 2, 1])
    }

    @Test func setPriorityMovesAQueuedItemUpOrDown() {
        var queue = DownloadQueue<Int>(maxConcurrent: 1, order: .fifo)
        _ = queue.enqueue(0, priority: .normal)
        for id in 1...4 { _ = queue.enqueue(id, priority: .normal) }
        #expect(queue.setPriority(3, to: .high) == true)
        #expect(queue.setPriority(1, to: .low) == true)
        #expect(queue.setPriority(2, to: .normal) == true)  // already there: keeps its place
        #expect(queue.setPriority(0, to: .high) == false)  // running
        #expect(queue.setPriority(9, to: .high) == false)
        #expect([queue.finish(), queue.finish(), queue.finish(), queue.finish()] == [3, 2, 4, 1])
    }

    @Test func removingAQueuedItem() {
        var queue = DownloadQueue<Int>(maxConcurrent: 1, order: .fifo)
        _ = queue.enqueue(0, priority: .normal)
        _ = queue.enqueue(1, priority: .normal)
        _ = queue.enqueue(2, priority: .normal)
        #expect(queue.remove(1) == true)
        #expect(queue.remove(1) == false)
        #expect(queue.remove(0) == false)  // running, not queued
        #expect(queue.pendingCount == 1)
        #expect(queue.finish() == 2)
    }

    @Test func longFIFORunsCompactWithoutLosingOrder() {
        var queue = DownloadQueue<Int>(maxConcurrent: 1, order: .fifo)
        _ = queue.enqueue(-1, priority: .normal)
        for id in 0..<500 { _ = queue.enqueue(id, priority: .normal) }
        var started: [Int] = []
        while let next = queue.finish() { started.append(next) }
        #expect(started == Array(0..<500))
    }
}
