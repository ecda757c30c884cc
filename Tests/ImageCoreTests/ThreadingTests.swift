import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct ThreadingTests {
    @Test func slowDecodesDoNotStarveOtherAsyncWork() async throws {
        // A pool of its own, sized like the CPU pool, so other tests keep theirs free.
        let pool = WorkPool(label: "starvation-test", maxConcurrent: ProcessInfo.processInfo.activeProcessorCount)
        let rig = Rig(decodeDelay: 0.02, workPool: pool)
        let urls = (0..<200).map { testURL("slow\($0)") }
        for url in urls { rig.serve(url) }
        let done = Locked(0)
        for url in urls {
            rig.manager.loadImage(with: url, context: rig.context()) { _ in done.withLock { $0 += 1 } }
        }
        // 200 decodes x 20 ms on a pool of `activeProcessorCount` threads take seconds; meanwhile unrelated async
        // work on the cooperative pool must keep running promptly.
        let start = Date()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    for _ in 0..<10 { await Task.yield() }
                }
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(done.value < 200, "decodes still running while the async work finished")
        #expect(elapsed < 1.0, "cooperative work took \(elapsed) s while decodes ran")
        #expect(rig.coder.maxConcurrentDecodes <= ProcessInfo.processInfo.activeProcessorCount)
        #expect(await waitUntil(timeout: 30) { done.value == 200 })
    }

    @Test func workPoolBoundsConcurrencyAndRunsEveryJob() async throws {
        let pool = WorkPool(label: "test", maxConcurrent: 3)
        let running = Locked(0)
        let peak = Locked(0)
        let finished = Locked(0)
        for _ in 0..<50 {
            pool.submit {
                let now = running.withLock {
                    $0 += 1
                    return $0
                }
                peak.withLock { $0 = max($0, now) }
                Thread.sleep(forTimeInterval: 0.002)
                running.withLock { $0 -= 1 }
                finished.withLock { $0 += 1 }
            }
        }
        #expect(await waitUntil { finished.value == 50 })
        #expect(peak.value <= 3)
        #expect(peak.value >= 2)
    }

    @Test func decodesRunOffTheCallersThread() async throws {
        // DataURLLoader completes synchronously inside loadImage, so an inline decode would block this call.
        let coder = TestCoder(decodeDelay: 0.3)
        let manager = ImageManager(cache: RecordingCache(), loader: DataURLLoader())
        let url = URL(string: "data:image/x-test;base64,\(TestCoder.data(width: 2, height: 2).base64EncodedString())")!
        var context = ImageContext()
        context.imageCoder = coder
        let recorder = DeliveryRecorder()
        let start = Date()
        manager.loadImage(with: url, context: context, completed: recorder.handler)
        #expect(Date().timeIntervalSince(start) < 0.2, "loadImage returned before the 0.3 s decode ran")
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(coder.decodeCount == 1)
    }
}
