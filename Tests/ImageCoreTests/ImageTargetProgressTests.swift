import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A plain class that shows images.
private final class ProgressView: ImageTarget {
    let imageTargetState = ImageTargetState()
    func display(_ image: Image?) {}
}

/// Collects a progress stream's values until it ends. Thread-safe.
private final class ProgressLog: Sendable {
    private let values = Locked<[ImageTargetProgress]>([])
    private let ended = Locked(false)

    init(_ stream: AsyncStream<ImageTargetProgress>) {
        Task {
            for await value in stream { self.values.withLock { $0.append(value) } }
            self.ended.withLock { $0 = true }
        }
    }

    var all: [ImageTargetProgress] { values.value }
    var hasEnded: Bool { ended.value }
}

/// Issue 25 item 8: the target's progress as a value and a stream (`UIView.sd_imageProgress`).
@Suite struct ImageTargetProgressTests {
    @Test(
        "UIView.sd_imageProgress: reset to zero by setImage, follows the download's bytes, 1.0 when the image arrives — readable and observable"
    )
    func progressFollowsTheLoadAndCompletesAtOne() async throws {
        let rig = Rig()
        let url = testURL()
        let data = TestCoder.data(width: 6, height: 6, colors: [.white, .black, .white, .black])
        rig.loader.set(.progressive(data, chunks: 4), for: url)
        let view = ProgressView()
        #expect(view.imageProgress == .zero)
        let log = ProgressLog(view.imageProgressUpdates)
        let recorder = DeliveryRecorder()
        let progressAtCompletion = Locked<ImageTargetProgress?>(nil)
        view.setImage(
            with: url, context: rig.context(), manager: rig.manager,
            completed: { result in
                progressAtCompletion.withLock { $0 = view.imageProgress }
                recorder.handler(result)
            })
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(view.imageProgress.isFinished && view.imageProgress.fractionCompleted == 1)
        #expect(progressAtCompletion.value?.fractionCompleted == 1, "1.0 before the completion runs, as SDWebImage")
        #expect(await waitUntil { log.all.last?.isFinished == true })
        let values = log.all
        #expect(values.first == .zero, "the stream starts with the current value")
        let bytes = values.filter { !$0.isFinished && $0.totalUnitCount != nil }
        #expect(bytes.map(\.completedUnitCount) == (1...4).map { data.count * $0 / 4 })
        #expect(bytes.allSatisfy { $0.totalUnitCount == data.count })
        let fractions = values.map(\.fractionCompleted)
        #expect(fractions == fractions.sorted(), "progress never goes back within one load")
        #expect(values.last?.completedUnitCount == data.count)

        // A new load resets it at once, before any byte arrives.
        rig.loader.hold()
        let next = testURL("next")
        rig.serve(next)
        let second = DeliveryRecorder()
        view.setImage(with: next, context: rig.context(), manager: rig.manager, completed: second.handler)
        #expect(view.imageProgress == .zero)
        #expect(await waitUntil { log.all.last == .zero })
        rig.loader.releaseAll()
        _ = try #require(await second.waitForFinal()).get()
        #expect(view.imageProgress.fractionCompleted == 1)
    }

    @Test("sd_imageProgress on a memory hit: no bytes reported, still 1.0 once the image is set")
    func aMemoryHitCompletesTheProgress() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedMemory(
            Image(pixels: PixelBuffer(width: 3, height: 3, layout: .gray8, bytes: [UInt8](repeating: 7, count: 9))),
            forKey: url.absoluteString)
        let view = ProgressView()
        view.setImage(with: url, context: rig.context(), manager: rig.manager)
        // The memory hit completes inside setImage.
        #expect(view.imageProgress.isFinished && view.imageProgress.fractionCompleted == 1)
        #expect(view.imageProgress.totalUnitCount == nil && view.imageProgress.completedUnitCount == 0)
    }

    @Test("sd_imageProgress on failure: stays where the download stopped, never 1.0")
    func aFailedLoadLeavesTheProgressWhereItStopped() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failAfterProgress(.invalidDownloadStatusCode(500), receivedBytes: 10), for: url)
        let view = ProgressView()
        let recorder = DeliveryRecorder()
        view.setImage(with: url, context: rig.context(), manager: rig.manager, completed: recorder.handler)
        #expect(try #require(await recorder.waitForFinal()).error?.code == .invalidDownloadStatusCode)
        #expect(
            view.imageProgress == ImageTargetProgress(completedUnitCount: 10, totalUnitCount: 20, isFinished: false))
        #expect(view.imageProgress.fractionCompleted == 0.5)
    }

    @Test(
        "sd_imageProgress and a superseded load: its bytes still reach its own progress block, never the target's value"
    )
    func aStaleLoadNeverMovesTheProgressOfTheNewOne() async throws {
        let rig = Rig()
        let stale = testURL("stale")
        let current = testURL("current")
        rig.loader.set(.failAfterProgress(.invalidDownloadStatusCode(500), receivedBytes: 10), for: stale)
        rig.serve(current)
        rig.loader.hold()
        let view = ProgressView()
        let log = ProgressLog(view.imageProgressUpdates)
        let staleBytes = Locked<[Int]>([])
        let staleDone = DeliveryRecorder()
        view.setImage(
            with: stale, context: rig.context(), manager: rig.manager,
            progress: { received, _, _ in staleBytes.withLock { $0.append(received) } }, completed: staleDone.handler)
        let currentDone = DeliveryRecorder()
        // Not cancelled by the second setImage, so the stale load really runs and reports bytes.
        view.setImage(
            with: current, options: .avoidAutoCancelImage, context: rig.context(), manager: rig.manager,
            completed: currentDone.handler)
        rig.loader.releaseAll()
        _ = await staleDone.waitForFinal()
        _ = try #require(await currentDone.waitForFinal()).get()
        #expect(staleBytes.value == [10], "the caller's own progress block still hears its load")
        #expect(view.imageProgress.isFinished)
        #expect(await waitUntil { log.all.last?.isFinished == true })
        #expect(!log.all.contains { $0.totalUnitCount == 20 }, "the stale load's 10 of 20 bytes never showed")
    }

    @Test("progress streams end when the target goes away (there is no KVO to unregister on Linux)")
    func streamsEndWithTheTarget() async throws {
        var view: ProgressView? = ProgressView()
        let log = ProgressLog(view!.imageProgressUpdates)
        let other = ProgressLog(view!.imageTargetState.progressUpdates(forKey: "other"))
        #expect(await waitUntil { log.all == [.zero] && other.all == [.zero] })
        view = nil
        #expect(await waitUntil { log.hasEnded && other.hasEnded })
    }

    @Test("progress is per operation key, and readable from many threads while loads run")
    func progressIsPerKeyAndThreadSafe() async throws {
        let rig = Rig(loaderDelay: 0.002)
        let view = ProgressView()
        let urls = (0..<40).map { testURL("k\($0)") }
        for url in urls { rig.serve(url) }
        let recorders = (0..<urls.count).map { _ in DeliveryRecorder() }
        let readers = Locked(0)
        let outOfRange = Locked(0)
        let reading = Task.detached {
            while !Task.isCancelled {
                for key in ["a", "b"] {
                    let value = view.imageTargetState.progress(forKey: key).fractionCompleted
                    if !(0...1).contains(value) { outOfRange.withLock { $0 += 1 } }
                }
                readers.withLock { $0 += 1 }
                await Task.yield()
            }
        }
        #expect(await waitUntil { readers.value > 0 })
        // The loads wait for their downloads until the reader has read while they run.
        rig.loader.hold()
        let before = readers.value
        for (index, url) in urls.enumerated() {
            view.setImage(
                with: url, context: rig.context([.setImageOperationKey: index.isMultiple(of: 2) ? "a" : "b"]),
                manager: rig.manager, completed: recorders[index].handler)
        }
        #expect(await waitUntil { readers.value > before + 100 })
        rig.loader.releaseAll()
        for recorder in recorders { _ = await recorder.waitForFinal() }
        let after = readers.value
        reading.cancel()
        #expect(after > before + 100, "the reader read \(after - before) times while the loads ran")
        #expect(outOfRange.value == 0)
        #expect(view.imageTargetState.progress(forKey: "a").isFinished)
        #expect(view.imageTargetState.progress(forKey: "b").isFinished)
        #expect(view.imageProgress == .zero, "the default key had no load")
    }
}
