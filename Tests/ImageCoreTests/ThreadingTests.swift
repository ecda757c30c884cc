import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct ThreadingTests {
    /// Decodes that block must not take the cooperative pool: with every decode held, unrelated async work still
    /// runs to the end. Were decodes on the cooperative pool (as wide as the cores), this test would hang and fail
    /// on its time limit.
    @Test(.timeLimit(.minutes(1))) func blockedDecodesDoNotStarveOtherAsyncWork() async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let pool = WorkPool(label: "starvation-test", maxConcurrent: cores)
        let rig = Rig(workPool: pool)
        rig.coder.holdDecodes()
        let urls = (0..<200).map { testURL("slow\($0)") }
        for url in urls { rig.serve(url) }
        let done = Locked(0)
        for url in urls {
            rig.manager.loadImage(with: url, context: rig.context()) { _ in done.withLock { $0 += 1 } }
        }
        #expect(await waitUntil(timeout: 30) { rig.coder.runningDecodes == cores }, "the pool is full of held decodes")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    for _ in 0..<10 { await Task.yield() }
                }
            }
        }
        #expect(done.value == 0, "the async work finished while every decode was still held")
        rig.coder.releaseDecodes()
        #expect(await waitUntil(timeout: 30) { done.value == 200 })
        #expect(rig.coder.maxConcurrentDecodes <= cores)
    }

    @Test func workPoolBoundsConcurrencyAndRunsEveryJob() async throws {
        let pool = WorkPool(label: "test", maxConcurrent: 3)
        let running = Locked(0)
        let peak = Locked(0)
        let finished = Locked(0)
        let released = Locked(false)
        for _ in 0..<50 {
            pool.submit {
                let now = running.withLock {
                    $0 += 1
                    return $0
                }
                peak.withLock { $0 = max($0, now) }
                while !released.value { usleep(200) }
                running.withLock { $0 -= 1 }
                finished.withLock { $0 += 1 }
            }
        }
        #expect(await waitUntil { running.value == 3 }, "three jobs run at once")
        released.withLock { $0 = true }
        #expect(await waitUntil { finished.value == 50 })
        #expect(peak.value == 3, "never more than three")
    }

    /// A loader that completes inside `loadImage` (the `data:` loader) must not make the decode run inside it:
    /// with decodes held, `loadImage` still returns (an inline decode would never return; the time limit fails it).
    @Test(.timeLimit(.minutes(1))) func decodesRunOffTheCallersThread() async throws {
        let coder = TestCoder()
        coder.holdDecodes()
        let manager = ImageManager(cache: RecordingCache(), loader: DataURLLoader())
        let url = URL(string: "data:image/x-test;base64,\(TestCoder.data(width: 2, height: 2).base64EncodedString())")!
        var context = ImageContext()
        context.imageCoder = coder
        let recorder = DeliveryRecorder()
        manager.loadImage(with: url, context: context, completed: recorder.handler)
        #expect(recorder.all.isEmpty)
        coder.releaseDecodes()
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(coder.decodeCount == 1)
    }
}
