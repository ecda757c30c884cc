import Testing

@testable import HTTPLoader

/// The coalescing rules on their own: no I/O, no clock.
@Suite struct TransferStateMachineTests {
    typealias Machine = TransferStateMachine

    @Test func firstJoinHasNoReplayAndSlotStartsTheTransfer() {
        var machine = Machine()
        #expect(machine.join(1, progressive: false) == .joined(replay: nil))
        #expect(machine.state == .queued)
        #expect(machine.slotGranted() == .execute)
        #expect(machine.state == .running(headReceived: false))
        // A second grant (a bug in the queue) must not restart it.
        #expect(machine.slotGranted() == .releaseSlot)
    }

    @Test func cancellingOneOfSeveralCompletesOnlyThatOne() {
        var machine = Machine()
        _ = machine.join(1, progressive: false)
        _ = machine.join(2, progressive: false)
        _ = machine.join(3, progressive: false)
        _ = machine.slotGranted()
        #expect(machine.leave(2) == .completeSubscriber)
        #expect(machine.subscribers.map(\.id) == [1, 3])
        #expect(!machine.isFinished)
        // Leaving twice or an unknown ID does nothing (no double completion).
        #expect(machine.leave(2) == .none)
        #expect(machine.leave(99) == .none)
        let ended = machine.finish(succeeded: true)
        #expect(ended.complete.map(\.id) == [1, 3])
    }

    @Test func lastLeaverCancelsTheRunningTransfer() {
        var machine = Machine()
        _ = machine.join(1, progressive: false)
        _ = machine.join(2, progressive: false)
        _ = machine.slotGranted()
        #expect(machine.leave(1) == .completeSubscriber)
        #expect(machine.leave(2) == .completeSubscriberAndCancelTransfer(wasQueued: false))
        #expect(machine.isFinished)
        // The HTTP task then fails with `cancelled`: nobody is left to complete.
        #expect(machine.finish(succeeded: false).complete.isEmpty)
        // And nobody can join a dying transfer.
        #expect(machine.join(3, progressive: false) == .transferEnded)
    }

    @Test func lastLeaverOfAQueuedTransferDropsItAndTheSlotIsGivenBack() {
        var machine = Machine()
        _ = machine.join(1, progressive: false)
        #expect(machine.leave(1) == .completeSubscriberAndCancelTransfer(wasQueued: true))
        #expect(machine.slotGranted() == .releaseSlot)
    }

    @Test func lateJoinerGetsAReplayOfEveryByteSoFar() {
        var machine = Machine(progressByteInterval: 1 << 30, progressTimeInterval: .max)
        _ = machine.join(1, progressive: false)
        _ = machine.slotGranted()
        machine.headReceived(expected: 1000)
        #expect(machine.bodyReceived(100, now: 0).report?.received == 100)  // the first bytes are always reported
        #expect(machine.bodyReceived(300, now: 1).report == nil)  // throttled
        let action = machine.join(2, progressive: true)
        #expect(
            action
                == .joined(
                    replay: Machine.ProgressReport(
                        subscribers: [Machine.Subscriber(id: 2, progressive: true)], received: 400, expected: 1000)))
        #expect(machine.joinCount == 2)
    }

    @Test func progressIsThrottledByBytesAndTime() {
        var machine = Machine(progressByteInterval: 1000, progressTimeInterval: 50)
        _ = machine.join(1, progressive: false)
        _ = machine.slotGranted()
        machine.headReceived(expected: nil)
        #expect(machine.bodyReceived(10, now: 0).report != nil)  // first
        #expect(machine.bodyReceived(10, now: 10).report == nil)
        #expect(machine.bodyReceived(10, now: 20).report == nil)
        #expect(machine.bodyReceived(10, now: 60).report?.received == 40)  // 50 ns passed
        #expect(machine.bodyReceived(999, now: 61).report == nil)
        #expect(machine.bodyReceived(1, now: 62).report?.received == 1040)  // 1000 bytes passed
        // The final count goes out once at the end when it was not reported yet.
        #expect(machine.bodyReceived(5, now: 63).report == nil)
        #expect(machine.finish(succeeded: true).finalReport?.received == 1045)
    }

    @Test func heldBackProgressIsFlushedOnceWhenTheStreamPauses() {
        var machine = Machine(progressByteInterval: 1000, progressTimeInterval: 50)
        _ = machine.join(1, progressive: false)
        _ = machine.slotGranted()
        #expect(machine.bodyReceived(10, now: 100).report != nil)
        #expect(machine.bodyReceived(10, now: 120) == .scheduleFlush(afterNanoseconds: 30))
        #expect(machine.bodyReceived(10, now: 130) == .none)  // one timer at a time
        #expect(machine.flush(now: 150)?.received == 30)
        #expect(machine.flush(now: 151) == nil)  // nothing new
        #expect(machine.bodyReceived(5, now: 160) == .scheduleFlush(afterNanoseconds: 40))
        _ = machine.finish(succeeded: true)
        #expect(machine.flush(now: 200) == nil)  // the timer outlived the transfer
    }

    @Test func theLastByteOfAKnownLengthIsReportedAtOnce() {
        var machine = Machine(progressByteInterval: 1 << 30, progressTimeInterval: .max)
        _ = machine.join(1, progressive: false)
        _ = machine.slotGranted()
        machine.headReceived(expected: 30)
        _ = machine.bodyReceived(10, now: 0)
        #expect(machine.bodyReceived(10, now: 0).report == nil)
        #expect(machine.bodyReceived(10, now: 0).report?.received == 30)
        #expect(machine.finish(succeeded: true).finalReport == nil)
    }

    @Test func failureCompletesEveryoneWithoutAFinalProgress() {
        var machine = Machine()
        _ = machine.join(1, progressive: false)
        _ = machine.join(2, progressive: true)
        _ = machine.slotGranted()
        _ = machine.bodyReceived(10, now: 0)
        _ = machine.bodyReceived(10, now: 1)
        let ended = machine.finish(succeeded: false)
        #expect(ended.complete.count == 2)
        #expect(ended.finalReport == nil)
        #expect(machine.finish(succeeded: false).complete.isEmpty)
    }

    @Test func restartForARetryForgetsTheBytes() {
        var machine = Machine()
        _ = machine.join(1, progressive: false)
        _ = machine.slotGranted()
        machine.headReceived(expected: 5)
        machine.restart()
        #expect(machine.state == .running(headReceived: false))
        #expect(machine.receivedBytes == 0)
        #expect(machine.expectedBytes == nil)
    }
}

extension TransferStateMachine.BodyAction {
    var report: TransferStateMachine.ProgressReport? {
        if case .report(let report) = self { return report }
        return nil
    }
}

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
