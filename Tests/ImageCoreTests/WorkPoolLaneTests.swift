import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// The work pool's two lanes: a backlog of cache encodes (background) must never make a decode a caller waits
/// for (normal) queue behind it.
@Suite struct WorkPoolLaneTests {
    /// A job that blocks its thread until `gate` opens, counting itself in `running` meanwhile.
    static func blocking(_ gate: Locked<Bool>, _ running: Locked<Int>) -> @Sendable () -> Void {
        {
            running.withLock { $0 += 1 }
            while !gate.value { usleep(200) }
            running.withLock { $0 -= 1 }
        }
    }

    @Test("a pool thread carries the pool's label in the kernel (what profilers show), not its spawner's name")
    func poolThreadsAreNamedAfterThePool() async {
        let pool = WorkPool(label: "named-pool-label-longer-than-15", maxConcurrent: 1)
        let name = Locked<String?>(nil)
        // Spawned from a thread with another name, as an event loop spawns pool threads.
        startThreadNamed("spawner-thread") {
            #expect(kernelThreadName() == "spawner-thread")
            pool.submit { name.withLock { $0 = kernelThreadName() } }
        }
        #expect(await waitUntil { name.value != nil })
        #expect(name.value == "named-pool-labe")
    }

    @Test func aNormalJobSubmittedAfterBackgroundOnesRunsFirst() async {
        let pool = WorkPool(label: "lanes-order", maxConcurrent: 1)
        let gate = Locked(false)
        let running = Locked(0)
        pool.submit(Self.blocking(gate, running))
        #expect(await waitUntil { running.value == 1 }, "the only thread is busy")
        let order = Locked([String]())
        for index in 0..<3 { pool.submit(priority: .background) { order.withLock { $0.append("encode\(index)") } } }
        pool.submit { order.withLock { $0.append("decode") } }
        #expect(pool.pendingBackgroundCount == 3)
        gate.withLock { $0 = true }
        #expect(await waitUntil { order.value.count == 4 })
        #expect(order.value == ["decode", "encode0", "encode1", "encode2"])
    }

    @Test func backgroundJobsLeaveAThreadForNormalWork() async {
        let pool = WorkPool(label: "lanes-share", maxConcurrent: 2)
        #expect(pool.maxBackgroundConcurrent == 1)
        let gate = Locked(false)
        let running = Locked(0)
        for _ in 0..<4 { pool.submit(priority: .background, Self.blocking(gate, running)) }
        #expect(await waitUntil { running.value == 1 }, "one background job runs")
        let decoded = Locked(false)
        pool.submit { decoded.withLock { $0 = true } }
        // The encodes are all still blocked: the decode can only have run on the thread they may not take.
        #expect(await waitUntil { decoded.value }, "the decode ran while every encode was held")
        #expect(running.value == 1 && pool.pendingBackgroundCount == 3)
        gate.withLock { $0 = true }
        #expect(await waitUntil { pool.pendingCount == 0 && running.value == 0 })
    }
}

/// What a job captured (images, bytes) is let go once the job ran, even while the pool never runs dry: a busy
/// pool that kept its spent jobs held every decoded image of the last thousand jobs (found by the soak).
@Suite struct WorkPoolReleaseTests {
    /// An object that says when it is freed.
    private final class Payload: Sendable {
        let freed: Locked<Bool>
        init(_ freed: Locked<Bool>) { self.freed = freed }
        deinit { freed.withLock { $0 = true } }
    }

    @Test(arguments: [WorkPool.Priority.normal, .background])
    func aJobThatRanNoLongerHoldsWhatItCapturedWhileOthersWait(priority: WorkPool.Priority) async {
        let pool = WorkPool(label: "release", maxConcurrent: 1)
        let firstGate = Locked(false)
        let secondGate = Locked(false)
        let running = Locked(0)
        pool.submit(priority: priority, WorkPoolLaneTests.blocking(firstGate, running))
        #expect(await waitUntil { running.value == 1 })
        let freed = Locked(false)
        let ran = Locked(false)
        do {
            let payload = Payload(freed)
            pool.submit(priority: priority) { [payload] in
                withExtendedLifetime(payload) { ran.withLock { $0 = true } }
            }
        }
        // Behind the watched job: one that holds the thread, and one that keeps the queue from draining.
        pool.submit(priority: priority, WorkPoolLaneTests.blocking(secondGate, running))
        pool.submit(priority: priority) {}
        firstGate.withLock { $0 = true }
        #expect(
            await waitUntil { ran.value && running.value == 1 }, "the watched job ran; the next one holds the thread")
        #expect(await waitUntil { freed.value }, "the spent job still holds what it captured")
        secondGate.withLock { $0 = true }
        #expect(await waitUntil { pool.pendingCount == 0 && running.value == 0 })
    }
}

/// The queue under the pools: a popped element is released at once, order is kept across compactions.
@Suite struct FIFOQueueTests {
    private final class Payload {}

    @Test func popsInOrderAcrossCompactionsAndReleasesWhatItPopped() {
        var queue = FIFOQueue<Payload>()
        var watched: [Weak] = []
        for _ in 0..<300 {
            let payload = Payload()
            watched.append(Weak(payload))
            queue.append(payload)
        }
        for index in 0..<299 {
            #expect(queue.popFirst() === watched[index].object)
            #expect(watched[index].object == nil, "element \(index) outlived its pop")
            if index % 3 == 0 {
                let payload = Payload()
                watched.append(Weak(payload))
                queue.append(payload)
            }
        }
        #expect(queue.count == 1 + 100)
        var rest: [Payload] = []
        while let next = queue.popFirst() { rest.append(next) }
        #expect(rest.map(ObjectIdentifier.init) == watched[299...].compactMap { $0.object }.map(ObjectIdentifier.init))
        #expect(queue.isEmpty && queue.popFirst() == nil)
    }

    private struct Weak {
        weak var object: Payload?
        init(_ object: Payload) { self.object = object }
    }
}

/// Through the manager: derived images' disk encodes never delay deliveries, and a backlog is bounded.
@Suite struct DiskEncodeBacklogTests {
    @Test(.timeLimit(.minutes(1))) func heldEncodesDelayNoDeliveryAndTheBacklogIsBounded() async throws {
        let rig = Rig(workPool: WorkPool(label: "encode-backlog", maxConcurrent: 2))
        let gate = Locked(false)
        let serializer = BlockCacheSerializer { image, _, _ in
            while !gate.value { usleep(200) }
            return TestCoder.data(width: image.width, height: image.height)
        }
        let context: [ImageContextOption: any Sendable] = [
            .imageTransformer: TestTransformer(width: 2, height: 2), .cacheSerializer: serializer,
        ]
        let loads = 80
        for index in 0..<loads {
            let url = testURL("backlog\(index)")
            rig.serve(url, width: 16, height: 16)
            let result = try await rig.load(url, context: context).get()
            #expect(result.image.width == 2, "delivered while every earlier encode is still held")
        }
        let dropped = rig.manager.statistics.diskEncodesDropped
        // One encode runs (held), 64 wait; the rest are dropped instead of piling up.
        #expect(dropped >= loads - 65 && dropped <= loads - 64)
        gate.withLock { $0 = true }
        #expect(await waitUntil { rig.manager.workPool.pendingCount == 0 })
    }
}
