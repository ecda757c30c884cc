import Foundation
import ImageTestSupport
import Testing
import WebImage

/// Defects the main-line model and the non-interference property found (issue 32, items 5 and 6), each pinned by a
/// test through the public API.
@Suite struct ModelFindingsTests {
    /// A manager over `origin` with a memory cache and the test coder.
    static func manager(_ origin: ModelOrigin) -> ImageManager {
        ImageManager(
            cache: CachesManager([MemoryCache()]), loader: origin, coders: CodersManager(coders: [TestCoder()]))
    }

    @Test("a plain load never shares the download of a load that brought its own validators (found by the model)")
    func ownValidatorsGetTheirOwnDownload() async throws {
        let origin = ModelOrigin()
        let url = URL(string: "test://findings/validators.timg")!
        let manager = Self.manager(origin)
        var revalidating = ImageContext()
        revalidating.loaderCachedMetadata = CacheEntryMetadata(etag: ModelOrigin.etag(version: 0, partition: nil))
        // Started back to back on one thread, so the plain load would join the revalidating load's download if
        // their job keys matched (the origin answers after 2 ms).
        let revalidated = LoadRecord()
        let plainRecord = LoadRecord()
        manager.loadImage(with: url, context: revalidating) { revalidated.deliver($0) }
        manager.loadImage(with: url) { plainRecord.deliver($0) }
        let revalidatedEnded = await revalidated.waitForFinal(timeout: 10)
        let plainEnded = await plainRecord.waitForFinal(timeout: 10)
        try #require(revalidatedEnded && plainEnded)
        let both: [Bool: Result<ImageResult, ImageError>] = [
            true: revalidated.summary.0!, false: plainRecord.summary.0!,
        ]
        if case .failure(let error)? = both[true] {
            #expect(error.code == .cacheNotModified, "the origin finds the caller's ETag current")
        }
        guard case .success(let plain)? = both[false] else {
            Issue.record("the plain load failed: \(String(describing: both[false]))")
            return
        }
        #expect(plain.image.width > 0)
    }

    @Test(
        "a header check's refusal under a load's own budget blocks nobody, though a plain load started the download (seed 4537138941193588380)"
    )
    func headerRefusalIsTheWaitingLoadsVerdict() async throws {
        let origin = ModelOrigin()
        let url = URL(string: "test://findings/header-budget.timg")!
        // The answer comes after 0.15 s, so both loads wait on one download and the plain one leaves before the
        // header check runs.
        origin.set(.slow, for: url)
        let manager = Self.manager(origin)
        var strict = ImageContext()
        strict.imageDecodeOptions = ImageDecodeOptions(maxPixelCount: 10)
        let plainRecord = LoadRecord()
        let strictRecord = LoadRecord()
        let plain = manager.loadImage(with: url) { plainRecord.deliver($0) }
        manager.loadImage(with: url, context: strict) { strictRecord.deliver($0) }
        // The plain load leaves after the strict one joined its download (after a memory miss a load joins on the
        // caller's thread; the pause is a margin, well inside the origin's 150 ms). Had it left first, the download
        // would have been cancelled and the strict load would have made its own: two requests, checked below.
        try await Task.sleep(for: .milliseconds(20))
        plain.cancel()
        #expect(await strictRecord.waitForFinal(timeout: 10))
        let refused = try #require(strictRecord.summary.0)
        guard case .failure(let error) = refused else {
            Issue.record("the strict load got an image of the test coder's size over a budget of 10 pixels")
            return
        }
        #expect(error.code == .imageTooLarge)
        #expect(origin.requestCount == 1, "the two loads shared one download, as the case needs")
        #expect(!manager.isFailedURL(url), "a budget of one load's own put the URL on the failed list")
        let later = try await manager.loadImage(with: url)
        #expect(later.image.width > 0)
    }

    @Test("an animation cut to its first frame by a load's animation budget never stands for the whole animation")
    func animationBudgetVariantIsNotStoredUnderTheKey() async throws {
        let origin = ModelOrigin()
        let url = URL(string: "test://findings/anim-budget.timg")!
        let manager = Self.manager(origin)
        var budgeted = ImageContext()
        budgeted.imageDecodeOptions = ImageDecodeOptions(
            animationBudget: AnimationBudget(maxFrameCount: 2, onExceeded: .firstFrameOnly))
        let first = try await manager.loadImage(with: url, options: .waitStoreCache, context: budgeted)
        #expect(first.image.frameCount == 1, "over the budget of 2 frames, the first frame is kept")
        let plain = try await manager.loadImage(with: url)
        #expect(plain.image.frameCount == 3, "a plain load gets every frame, not the budgeted load's variant")
        let again = try await manager.loadImage(with: url, context: budgeted)
        #expect(again.image.frameCount == 1, "a cached animation over the budget gives its first frame")
    }

    @Test("previews of an animation are not transformed when its final image is not (found by the model)")
    func previewsOfAnAnimationFollowTheFinalTransform() async throws {
        let origin = ModelOrigin()
        let url = URL(string: "test://findings/anim-previews.timg")!
        // The body arrives in pieces, and the answer waits 0.15 s after the last, so the previews are decoded.
        origin.setTrickle(true, for: url)
        origin.set(.slow, for: url)
        let manager = Self.manager(origin)
        var context = ImageContext()
        context.imageTransformer = CompoundingTransformer(.grow(2))
        let record = LoadRecord()
        manager.loadImage(with: url, options: .progressiveLoad, context: context) { record.deliver($0) }
        #expect(await record.waitForFinal(timeout: 10))
        let final = try #require(try record.summary.0?.get())
        #expect(final.image.frameCount == 3 && !final.image.metadata.isTransformed, "an animation is not transformed")
        #expect(!record.previews.isEmpty)
        for preview in record.previews {
            #expect(!preview.metadata.isTransformed, "a preview transformed where its final image is not")
            #expect(preview.width == final.image.width && preview.height == final.image.height)
        }
    }

    @Test(
        "previews of an animation a load cuts to its first frame are transformed as its still final image is (seed 7678243790146302701)",
        arguments: [
            ImageDecodeOptions(firstFrameOnly: true),
            ImageDecodeOptions(animationBudget: AnimationBudget(maxFrameCount: 2, onExceeded: .firstFrameOnly)),
        ])
    func previewsOfAFirstFrameFollowTheFinalTransform(decodeOptions: ImageDecodeOptions) async throws {
        let origin = ModelOrigin()
        let url = URL(string: "test://findings/anim-first-frame-previews.timg")!
        origin.setTrickle(true, for: url)
        origin.set(.slow, for: url)
        let manager = Self.manager(origin)
        var context = ImageContext()
        context.imageTransformer = CompoundingTransformer(.grow(2))
        context.imageDecodeOptions = decodeOptions
        let record = LoadRecord()
        manager.loadImage(with: url, options: .progressiveLoad, context: context) { record.deliver($0) }
        #expect(await record.waitForFinal(timeout: 10))
        let final = try #require(try record.summary.0?.get())
        #expect(final.image.frameCount == 1 && final.image.metadata.isTransformed, "a still image is transformed")
        #expect(!record.previews.isEmpty)
        for preview in record.previews {
            #expect(preview.metadata.isTransformed, "a preview untransformed where its final image is transformed")
            #expect(preview.frameCount == 1)
            #expect(preview.width == final.image.width && preview.height == final.image.height)
        }
    }
}
