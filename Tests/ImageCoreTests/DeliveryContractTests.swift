import Dispatch
import Foundation
import Testing

@testable import ImageCore
@testable import ImageTestSupport

/// A target that records displays and is released on demand.
private final class RecordingView: ImageTarget {
    let imageTargetState = ImageTargetState()
    private let shown = Locked<[Int?]>([])
    func display(_ image: Image?) { shown.withLock { $0.append(image?.width) } }
    var displayedWidths: [Int?] { shown.value }
}

/// Every caller hears back exactly once, nothing arrives after the final result, and a target behaves like a
/// view (issue 14 items 4 and 6).
@Suite struct DeliveryContractTests {
    @Test func aSupersededLoadStillCompletesOnASerialCallbackQueue() async throws {
        let rig = Rig()
        rig.loader.hold()
        let (first, second) = (testURL("first"), testURL("second"))
        rig.serve(first, width: 3, height: 3)
        rig.serve(second, width: 5, height: 5)
        let main = DispatchQueue(label: "main-like")
        let view = RecordingView()
        let (one, two) = (DeliveryRecorder(), DeliveryRecorder())
        let context = rig.context([.callbackQueue: CallbackQueue.dispatch(main)])
        view.setImage(with: first, context: context, manager: rig.manager, completed: one.handler)
        view.setImage(with: second, context: context, manager: rig.manager, completed: two.handler)
        rig.loader.releaseAll()
        let superseded = try #require(await one.waitForFinal(), "the superseded load's completion was called")
        #expect(superseded.error?.code == .cancelled)
        #expect(try #require(await two.waitForFinal()).value?.image.width == 5)
        #expect(one.all.count == 1 && two.all.count == 1)
        main.sync {}
        #expect(!view.displayedWidths.contains(3), "only the superseded image is withheld")
    }

    @Test func aSupersededLoadThatIsNotCancelledCompletesWithoutBeingShown() async throws {
        let rig = Rig()
        rig.loader.hold()
        let (first, second) = (testURL("first"), testURL("second"))
        rig.serve(first, width: 3, height: 3)
        rig.serve(second, width: 5, height: 5)
        let view = RecordingView()
        let (one, two) = (DeliveryRecorder(), DeliveryRecorder())
        view.setImage(with: first, context: rig.context(), manager: rig.manager, completed: one.handler)
        view.setImage(
            with: second, options: .avoidAutoCancelImage, context: rig.context(), manager: rig.manager,
            completed: two.handler)
        rig.loader.releaseAll()
        #expect(try #require(await one.waitForFinal()).value?.image.width == 3)
        #expect(try #require(await two.waitForFinal()).value?.image.width == 5)
        #expect(await waitUntil { view.displayedWidths.contains(5) })
        #expect(!view.displayedWidths.contains(3))
    }

    @Test func releasingATargetCancelsItsLoadAndStillCompletes() async throws {
        let rig = Rig()
        rig.loader.hold()
        let url = testURL()
        rig.serve(url)
        let recorder = DeliveryRecorder()
        var view: RecordingView? = RecordingView()
        view?.setImage(with: url, context: rig.context(), manager: rig.manager, completed: recorder.handler)
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        view = nil
        #expect(try #require(await recorder.waitForFinal()).error?.code == .cancelled)
        #expect(rig.loader.cancelledCount == 1, "the loader saw the abort")
        rig.loader.releaseAll()
    }

    @Test func theOptionsProcessorSeesTheTargetsOperationKey() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let seen = Locked<[String?]>([])
        rig.manager.optionsProcessor = BlockOptionsProcessor { _, options, context in
            seen.withLock { $0.append(context.setImageOperationKey) }
            return OptionsResult(options: options, context: context)
        }
        let view = RecordingView()
        let recorder = DeliveryRecorder()
        view.setImage(
            with: url, context: rig.context([.setImageOperationKey: "avatar"]), manager: rig.manager,
            completed: recorder.handler)
        _ = await recorder.waitForFinal()
        view.setImage(with: url, context: rig.context(), manager: rig.manager)
        #expect(seen.value == ["avatar", view.defaultImageOperationKey])
    }

    @Test func aPrefetchBatchCancelledAsSoonAsItStartsSendsNoRequest() async throws {
        let rig = Rig()
        let urls = (0..<5).map { testURL("p\($0)") }
        for url in urls { rig.serve(url) }
        // The prefetcher's start queue is held, so "as soon as it starts" is deterministic.
        let startQueue = DispatchQueue(label: "prefetch-start")
        startQueue.suspend()
        let prefetcher = ImagePrefetcher(manager: rig.manager, maxConcurrentPrefetchCount: 3, startQueue: startQueue)
        prefetcher.context = rig.context()
        let token = prefetcher.prefetch(urls)
        token.cancel()
        startQueue.resume()
        startQueue.sync {}
        #expect(rig.loader.requestCount == 0)
    }

    @Test func previewsNeverArriveAfterTheFinalResult() async throws {
        // The full decode is slow, so finals land while other loads' previews are still being delivered.
        let rig = Rig(decodeDelay: 0.01)
        let urls = (0..<50).map { testURL("prog\($0)") }
        for url in urls {
            rig.loader.set(
                .progressive(TestCoder.data(width: 4, height: 4, colors: [.white, .black, .white]), chunks: 8),
                for: url)
        }
        let concurrent = DispatchQueue(label: "concurrent", attributes: .concurrent)
        let violations = Locked(0)
        let finals = Locked(0)
        let previews = Locked(0)
        for round in 0..<20 {
            for url in urls {
                let finished = Locked(false)
                let overlapping = Locked(false)
                let context =
                    round.isMultiple(of: 2)
                    ? rig.context() : rig.context([.callbackQueue: CallbackQueue.dispatch(concurrent)])
                rig.manager.loadImage(with: url, options: [.progressiveLoad, .fromLoaderOnly], context: context) {
                    result in
                    let reentered = overlapping.withLock { busy -> Bool in
                        defer { busy = true }
                        return busy
                    }
                    let late = finished.withLock { $0 }
                    if late || reentered { violations.withLock { $0 += 1 } }
                    if (try? result.get())?.isFinal ?? true {
                        finished.withLock { $0 = true }
                        finals.withLock { $0 += 1 }
                    } else {
                        previews.withLock { $0 += 1 }
                    }
                    overlapping.withLock { $0 = false }
                }
            }
        }
        #expect(await waitUntil(timeout: 30) { finals.value == 20 * urls.count })
        #expect(violations.value == 0, "a delivery after the final result, or two deliveries at once")
        #expect(previews.value > 400, "only \(previews.value) previews: finals hardly had previews to race")
    }
}
