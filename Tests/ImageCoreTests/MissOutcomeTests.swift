import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32, defect 8: how each claimed cache miss ends follows from what happened to its own key — a key whose
/// product a transform refused is `notStored` (a fleet's waiters fetch for themselves at once), a key whose loads
/// were all cancelled is `abandoned` (one waiter takes the fetch over), whatever other keys of the shared fetch did.
/// On c19952b the issue measured the opposite (the transform's keys ended `abandoned`; the cancelled key `notStored`).
@Suite struct MissOutcomeTests {
    static func outcomes(_ cache: RecordingCache) -> [String: CacheMissOutcome] {
        Dictionary(cache.endedMisses.map { ($0.key, $0.outcome) }, uniquingKeysWith: { first, _ in first })
    }

    @Test("a failed transform ends its key's and the original's misses notStored")
    func failedTransformIsNotStored() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        var context = ImageContext()
        context.imageTransformer = TestTransformer(width: 2, height: 2, fails: true)
        let key = try #require(rig.manager.cacheKey(for: url, context: context))
        let result = await rig.load(
            url, context: [.imageTransformer: TestTransformer(width: 2, height: 2, fails: true)])
        #expect(result.error?.code == .transformFailed)
        #expect(await waitUntil(timeout: 5) { Self.outcomes(rig.cache).count == 2 })
        let ended = Self.outcomes(rig.cache)
        #expect(ended[key] == .notStored)
        #expect(ended[url.absoluteString] == .notStored, "the original's key: fetched, and not stored by this fetch")
    }

    @Test("a load cancelled while a co-subscriber stored its own key ends its key abandoned")
    func cancelledKeyIsAbandonedWhateverOthersStored() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url)
        rig.loader.hold()
        let small = TestTransformer(width: 2, height: 2)
        let large = TestTransformer(width: 3, height: 3)
        var smallContext = ImageContext()
        smallContext.imageTransformer = small
        var largeContext = ImageContext()
        largeContext.imageTransformer = large
        let cancelledKey = try #require(rig.manager.cacheKey(for: url, context: smallContext))
        let storedKey = try #require(rig.manager.cacheKey(for: url, context: largeContext))
        let cancelled = DeliveryRecorder()
        let kept = DeliveryRecorder()
        let operation = rig.manager.loadImage(with: url, context: smallContext, completed: cancelled.handler)
        rig.manager.loadImage(with: url, options: .waitStoreCache, context: largeContext, completed: kept.handler)
        #expect(await waitUntil(timeout: 5) { rig.loader.requestCount == 1 })
        operation.cancel()
        rig.loader.releaseAll()
        #expect(await kept.waitForFinal()?.value?.image.width == 3)
        #expect(await cancelled.waitForFinal()?.error?.code == .cancelled)
        #expect(await waitUntil(timeout: 5) { Self.outcomes(rig.cache)[cancelledKey] != nil })
        let ended = Self.outcomes(rig.cache)
        #expect(ended[storedKey] == .stored)
        #expect(ended[cancelledKey] == .abandoned, "nobody decided anything for this key: a waiter may take it over")
    }
}
