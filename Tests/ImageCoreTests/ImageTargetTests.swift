import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A plain class that shows images: records every display.
private final class View: ImageTarget {
    let imageTargetState = ImageTargetState()
    private let shown = Locked<[Image?]>([])
    func display(_ image: Image?) { shown.withLock { $0.append(image) } }
    var displays: [Image?] { shown.value }
    var current: Image? { shown.value.last ?? nil }
}

@Suite struct ImageTargetTests {
    private let placeholder = Image(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8, bytes: [0]))

    @Test func placeholderFirstThenImage() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 6, height: 6)
        let view = View()
        let recorder = DeliveryRecorder()
        view.setImage(
            with: url, placeholder: placeholder, context: rig.context(), manager: rig.manager,
            completed: recorder.handler)
        #expect(view.displays.first??.width == 1, "placeholder shown before the load")
        #expect(view.currentImageURL == url)
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(view.current?.width == 6)
    }

    @Test func delayPlaceholderShowsItOnlyAfterFailure() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(.failure(.invalidDownloadStatusCode(500)), for: url)
        // Held, so the failure can't arrive before the check below (the loader answers on its own queue).
        rig.loader.hold()
        let view = View()
        let recorder = DeliveryRecorder()
        view.setImage(
            with: url, placeholder: placeholder, options: .delayPlaceholder, context: rig.context(),
            manager: rig.manager,
            completed: recorder.handler)
        #expect(view.displays.isEmpty)
        #expect(await waitUntil { rig.loader.requestCount(for: url) == 1 })
        rig.loader.releaseAll()
        _ = await recorder.waitForFinal()
        #expect(view.displays.count == 1)
        #expect(view.current?.width == 1)
    }

    @Test func avoidAutoSetImageLeavesTheTargetAlone() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        let view = View()
        let recorder = DeliveryRecorder()
        view.setImage(
            with: url, options: .avoidAutoSetImage, context: rig.context(), manager: rig.manager,
            completed: recorder.handler)
        _ = try #require(await recorder.waitForFinal()).get()
        #expect(view.displays.count == 1 && view.displays[0] == nil, "only the (nil) placeholder was shown")
    }

    @Test func aSecondSetImageCancelsTheFirstWhichNeverOverwritesIt() async throws {
        let rig = Rig()
        let slow = testURL("slow")
        let fast = testURL("fast")
        rig.serve(slow, width: 11, height: 11)
        rig.serve(fast, width: 22, height: 22)
        rig.loader.hold()
        let view = View()
        let first = DeliveryRecorder()
        let second = DeliveryRecorder()
        view.setImage(
            with: slow, options: .fromLoaderOnly, context: rig.context(), manager: rig.manager, completed: first.handler
        )
        #expect(rig.loader.requestCount == 1)
        view.setImage(
            with: fast, options: .fromLoaderOnly, context: rig.context(), manager: rig.manager,
            completed: second.handler)
        rig.loader.releaseAll()
        _ = try #require(await second.waitForFinal()).get()
        _ = await first.waitForFinal()
        #expect(await waitUntil { !rig.manager.isRunning })
        #expect(view.current?.width == 22)
        #expect(!view.displays.contains { $0?.width == 11 })
        #expect(first.all.count == 1, "the superseded load completes once")
        #expect(first.final?.error?.code == .cancelled)
        #expect(view.currentImageURL == fast)
        #expect(rig.loader.cancelledCount == 1)
    }

    @Test func separateOperationKeysRunSideBySide() async throws {
        let rig = Rig()
        let a = testURL("a")
        let b = testURL("b")
        rig.serve(a)
        rig.serve(b)
        rig.loader.hold()
        let view = View()
        let ra = DeliveryRecorder()
        let rb = DeliveryRecorder()
        view.setImage(
            with: a, context: rig.context([.setImageOperationKey: "avatar"]), manager: rig.manager,
            completed: ra.handler)
        view.setImage(
            with: b, context: rig.context([.setImageOperationKey: "banner"]), manager: rig.manager,
            completed: rb.handler)
        rig.loader.releaseAll()
        _ = try #require(await ra.waitForFinal()).get()
        _ = try #require(await rb.waitForFinal()).get()
        #expect(view.imageTargetState.imageURL(forKey: "avatar") == a)
        #expect(view.imageTargetState.imageURL(forKey: "banner") == b)
        #expect(rig.loader.cancelledCount == 0)
    }
}
