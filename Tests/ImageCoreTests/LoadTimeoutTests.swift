import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// A load's own deadline (`ImageContext.loadTimeout`, issue 34 item 4): it counts from the call, waiting for
/// admission included, ends only the load that set it, and changes nothing for the loads it shares work with.
@Suite("A load's deadline (ImageContext.loadTimeout)")
struct LoadTimeoutTests {
    @Test("a load waiting for admission past its deadline ends timedOut without a download; the one ahead is untouched")
    func admissionWaitCountsAgainstTheDeadline() async throws {
        let rig = Rig()
        rig.manager.maxDownloadsAheadOfDecoding = 1
        let first = testURL("ahead")
        let waiting = testURL("waiting")
        rig.serve(first)
        rig.serve(waiting)
        rig.loader.hold()
        let firstRecorder = DeliveryRecorder()
        let waitingRecorder = DeliveryRecorder()
        rig.manager.loadImage(with: first, context: rig.context(), completed: firstRecorder.handler)
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        let started = Date()
        rig.manager.loadImage(
            with: waiting, context: rig.context([.loadTimeout: 0.2]), completed: waitingRecorder.handler)
        // Nothing but the deadline can end it (the download ahead is held): any end in time is the deadline's.
        let result = await waitingRecorder.waitForFinal()
        let elapsed = Date().timeIntervalSince(started)
        let error = try #require(result?.error)
        #expect(error.code == .timedOut && error.stage == .request)
        #expect(elapsed >= 0.19, "ended after \(elapsed) s, before its deadline of 0.2 s")
        #expect(rig.loader.requestCount(for: waiting) == 0, "the download started after the load ended")
        #expect(firstRecorder.final == nil, "the load ahead ended with the other's deadline")
        rig.loader.releaseAll()
        #expect(await firstRecorder.waitForFinal()?.value != nil)
        #expect(rig.loader.requestCount(for: waiting) == 0)
        #expect(waitingRecorder.finals.count == 1)
        #expect(await waitUntil { !rig.manager.isRunning })
    }

    @Test("a load sharing a download ends at its deadline; the download goes on and the other load gets the image")
    func sharedDownloadOutlivesOneLoadsDeadline() async throws {
        let rig = Rig()
        let url = testURL("shared")
        rig.serve(url, width: 12, height: 9)
        rig.loader.hold()
        let patient = DeliveryRecorder()
        let hurried = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context(), completed: patient.handler)
        rig.manager.loadImage(with: url, context: rig.context([.loadTimeout: 0.1]), completed: hurried.handler)
        #expect(await waitUntil { rig.loader.requestCount == 1 })
        #expect(await hurried.waitForFinal()?.error?.code == .timedOut)
        #expect(rig.loader.cancelledCount == 0, "the shared transfer was cancelled with one of its loads")
        rig.loader.releaseAll()
        let image = try #require(await patient.waitForFinal()?.value?.image)
        #expect(image.width == 12 && image.height == 9)
        #expect(rig.loader.requestCount == 1)
        #expect(hurried.finals.count == 1)
        // The image was stored for the key as for any load: the deadline is not a key part.
        let again = await rig.load(url, context: [.loadTimeout: 5.0])
        #expect(again.value?.cacheType == .memory)
    }

    @Test("a load alone on its download cancels it at its deadline, and its URL is not blocked")
    func aloneItCancelsItsDownload() async throws {
        let rig = Rig()
        let url = testURL("alone")
        rig.serve(url)
        rig.loader.hold()
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: rig.context([.loadTimeout: 0.1]), completed: recorder.handler)
        #expect(await recorder.waitForFinal()?.error?.code == .timedOut)
        #expect(await waitUntil { rig.loader.cancelledCount == 1 }, "the transfer outlived its only load")
        rig.loader.releaseAll()
        #expect(await rig.load(url).value != nil, "a timed-out load blocked its URL")
    }

    @Test("a load that finishes within its deadline succeeds, and nothing is delivered after")
    func withinTheDeadline() async throws {
        let rig = Rig()
        let url = testURL("quick")
        rig.serve(url)
        let recorder = DeliveryRecorder()
        // A deadline far above what an 8x8 load takes on a loaded machine, then a wait past it: the timer fires on a
        // finished load and must deliver nothing.
        let started = Date()
        rig.manager.loadImage(with: url, context: rig.context([.loadTimeout: 2]), completed: recorder.handler)
        #expect(await recorder.waitForFinal()?.value != nil)
        try await Task.sleep(nanoseconds: UInt64(max(0, 2.5 - Date().timeIntervalSince(started)) * 1e9))
        #expect(recorder.finals.count == 1 && recorder.all.count == 1)
    }
}
