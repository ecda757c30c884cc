import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct AsyncAPITests {
    @Test func asyncLoadReturnsTheFinalImage() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 3, height: 4)
        let result = try await rig.manager.loadImage(with: url, context: rig.context())
        #expect(result.image.height == 4 && result.isFinal)
        do {
            _ = try await rig.manager.loadImage(with: nil)
            Issue.record("nil URL loaded")
        } catch {
            #expect(error.code == .invalidURL)
        }
    }

    @Test func taskCancellationCancelsTheLoad() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let task = Task { try await rig.manager.loadImage(with: url, context: rig.context()) }
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        task.cancel()
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("a cancelled load returned an image")
            return
        }
        #expect((error as? ImageError)?.code == .cancelled)
        #expect(rig.loader.cancelledCount == 1)
    }

    @Test func eventStreamCarriesProgressPreviewsAndTheFinalImage() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedMemory(
            try TestCoder().decode(TestCoder.data(width: 5, height: 5), options: ImageDecodeOptions()),
            forKey: url.absoluteString)
        rig.serve(url, width: 6, height: 6)
        var events: [String] = []
        for try await event in rig.manager.imageEvents(for: url, options: .refreshCached, context: rig.context()) {
            switch event {
            case .progress: events.append("progress")
            case .preview(let result): events.append("preview\(result.image.width)")
            case .completed(let result): events.append("final\(result.image.width)")
            }
        }
        #expect(events.first == "preview5")
        #expect(events.contains("progress"))
        #expect(events.last == "final6")
    }

    @Test func progressiveLoadsDeliverPreviewsDecodedByTheCoreThenTheFinalImage() async throws {
        // The full decode is slow, so the previews (decoded incrementally without it) surely come first.
        let rig = Rig(decodeDelay: 0.2)
        let url = testURL()
        let data = TestCoder.data(width: 6, height: 4, colors: [.black, .white, .white, .white])
        rig.loader.set(.progressive(data, chunks: 4), for: url)
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, options: .progressiveLoad, context: rig.context(), completed: recorder.handler)
        let final = try #require(await recorder.waitForFinal()).get()
        #expect(final.image.frameCount == 4 && !final.image.metadata.isPartial)
        let previews = recorder.all.compactMap { try? $0.get() }.filter { !$0.isFinal }
        #expect(!previews.isEmpty, "the core decoded the partial bytes the loader handed over")
        #expect(previews.allSatisfy { $0.image.metadata.isPartial && $0.image.width == 6 })
        #expect(rig.coder.decodeCount == 1, "one full decode; previews go through the incremental decoder")
    }
}
