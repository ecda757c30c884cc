import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Issue 25 item 6: thumbnail sizes that may scale up (SDWebImage's `shouldScaleUp`), off by default.
@Suite struct ThumbnailScaleUpTests {
    /// SDWebImage's `SDImageCoderHelper.scaledSizeWithImageSize:scaleSize:preserveAspectRatio:shouldScaleUp:`, in
    /// exact integer arithmetic (the original's CGFloat ratios are compared by cross-multiplying).
    private static func sdScaledSize(
        width: Int, height: Int, scale: PixelSize, preserveAspectRatio: Bool, shouldScaleUp: Bool
    ) -> PixelSize {
        guard width > 0, height > 0, scale.width > 0, scale.height > 0 else {
            return PixelSize(width: width, height: height)
        }
        var result: PixelSize
        if preserveAspectRatio {
            if width * scale.height > scale.width * height {  // pixelRatio > scaleRatio: the width limits
                result = PixelSize(width: scale.width, height: (scale.width * height + width - 1) / width)
            } else {
                result = PixelSize(width: (scale.height * width + height - 1) / height, height: scale.height)
            }
        } else {
            result = scale
        }
        if !shouldScaleUp {
            result = PixelSize(width: min(width, result.width), height: min(height, result.height))
        }
        return result
    }

    @Test(
        "SDImageCoderHelper scaledSizeWithImageSize:scaleSize:preserveAspectRatio:shouldScaleUp: — targetSize agrees with it on random sizes, up to rounding of the side that does not limit"
    )
    func targetSizeAgreesWithSDWebImagesSizeHelper() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ThumbnailScaleUpTests seed: \(seed)")
        var rng = SplitMix64(seed: seed)
        for run in 0..<20_000 {
            let width = Int.random(in: 1...3000, using: &rng)
            let height = Int.random(in: 1...3000, using: &rng)
            let thumb = PixelSize(
                width: Int.random(in: -2...3000, using: &rng), height: Int.random(in: -2...3000, using: &rng))
            let fit = Bool.random(using: &rng)
            let up = Bool.random(using: &rng)
            let options = ImageDecodeOptions(
                thumbnailPixelSize: thumb, preserveAspectRatio: fit, allowsThumbnailUpscaling: up)
            let ours = options.targetSize(forSourceWidth: width, height: height)
            let theirs = Self.sdScaledSize(
                width: width, height: height, scale: thumb, preserveAspectRatio: fit, shouldScaleUp: up)
            let context = "seed \(seed) run \(run): \(width)x\(height) → \(thumb) fit \(fit) up \(up)"
            #expect(ours.width >= 1 && ours.height >= 1, "\(context)")
            if !up {
                #expect(ours.width <= width && ours.height <= height, "never larger than the source: \(context)")
            }
            if !fit || thumb.width <= 0 || thumb.height <= 0 {
                #expect(ours == theirs, "\(context)")
                continue
            }
            // Fit: the limiting side is exact, the other one is rounded here and ceiled by SDWebImage.
            #expect(abs(ours.width - theirs.width) <= 1 && abs(ours.height - theirs.height) <= 1, "\(context)")
            if up {
                #expect(ours.width <= thumb.width && ours.height <= thumb.height, "fits the box: \(context)")
                #expect(ours.width == thumb.width || ours.height == thumb.height, "fills one side: \(context)")
            }
        }
    }

    @Test("shouldScaleUp examples: off by default; fit and fill reach the box; the scale-down budget still shrinks")
    func examples() {
        let box = PixelSize(width: 200, height: 200)
        #expect(ImageDecodeOptions().allowsThumbnailUpscaling == false)
        #expect(
            ImageDecodeOptions(thumbnailPixelSize: box).targetSize(forSourceWidth: 50, height: 25)
                == PixelSize(width: 50, height: 25))
        let fit = ImageDecodeOptions(thumbnailPixelSize: box, allowsThumbnailUpscaling: true)
        #expect(fit.targetSize(forSourceWidth: 50, height: 25) == PixelSize(width: 200, height: 100))
        #expect(fit.targetSize(forSourceWidth: 400, height: 100) == PixelSize(width: 200, height: 50))
        let fill = ImageDecodeOptions(
            thumbnailPixelSize: box, preserveAspectRatio: false, allowsThumbnailUpscaling: true)
        #expect(fill.targetSize(forSourceWidth: 50, height: 25) == box)
        var budget = fit
        budget.scaleDownLimitBytes = 100 * 50 * 4
        #expect(budget.targetSize(forSourceWidth: 50, height: 25) == PixelSize(width: 100, height: 50))
        #expect(fit.targetSize(forSourceWidth: 0, height: 25) == PixelSize(width: 0, height: 25))
    }

    @Test("an upscaled thumbnail counts against the pixel budget: refused from the header with imageTooLarge")
    func upscalingIsBoundedByThePixelBudget() throws {
        var options = ImageDecodeOptions(
            thumbnailPixelSize: PixelSize(width: 2000, height: 1000), allowsThumbnailUpscaling: true)
        options.maxPixelCount = 1_000_000
        let error = #expect(throws: ImageError.self) { try options.checkPixelBudget(width: 20, height: 10) }
        #expect(error?.code == .imageTooLarge)
        // The same source, scaled up less, fits.
        options.thumbnailPixelSize = PixelSize(width: 1000, height: 1000)
        try options.checkPixelBudget(width: 20, height: 10)
        // A 10x20 header fits a 100000x1000 box as 500x1000, but rotated by EXIF (20x10) as 2000x1000: a coder
        // that applies the orientation sizes the rotated image, so that one is checked too.
        options.thumbnailPixelSize = PixelSize(width: 100_000, height: 1000)
        #expect(options.targetSize(forSourceWidth: 10, height: 20) == PixelSize(width: 500, height: 1000))
        #expect(throws: ImageError.self) { try options.checkPixelBudget(width: 10, height: 20) }
        // Without the opt-in nothing grows, so a large box is fine.
        options.allowsThumbnailUpscaling = false
        try options.checkPixelBudget(width: 20, height: 10)
        // An absurd box never overflows.
        let absurd = ImageDecodeOptions(
            thumbnailPixelSize: PixelSize(width: .max, height: .max), allowsThumbnailUpscaling: true)
        #expect(absurd.targetSize(forSourceWidth: 3, height: 2).width >= Int.max / 2)
        #expect(throws: ImageError.self) { try absurd.checkPixelBudget(width: 3, height: 2) }
    }

    private func upContext(_ rig: Rig, box: PixelSize, up: Bool, fit: Bool = true) -> ImageContext {
        var context = rig.context([.imageThumbnailPixelSize: box])
        context.imageDecodeOptions = ImageDecodeOptions(preserveAspectRatio: fit, allowsThumbnailUpscaling: up)
        return context
    }

    @Test(
        "shouldScaleUp through ImageManager: it is a key part ( thumbnail(WxH,fit,up) ), so an upscaled and a plain thumbnail never share an entry"
    )
    func theFlagIsAKeyPart() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 10, height: 5)
        let box = PixelSize(width: 40, height: 40)
        let plainKey = try #require(rig.manager.cacheKey(for: url, context: upContext(rig, box: box, up: false)))
        let upKey = try #require(rig.manager.cacheKey(for: url, context: upContext(rig, box: box, up: true)))
        #expect(plainKey != upKey)
        #expect(upKey.contains(" thumbnail(40x40,fit,up) ") && plainKey.contains(" thumbnail(40x40,fit) "))
        let fillKey = rig.manager.cacheKey(for: url, context: upContext(rig, box: box, up: true, fit: false))
        #expect(fillKey?.contains(" thumbnail(40x40,fill,up) ") == true)
        // Without a thumbnail size the flag changes nothing, so it adds nothing to the key.
        var noThumb = rig.context()
        noThumb.imageDecodeOptions = ImageDecodeOptions(allowsThumbnailUpscaling: true)
        #expect(rig.manager.cacheKey(for: url, context: noThumb) == url.absoluteString)

        let plain = try await rig.manager.loadImage(with: url, context: upContext(rig, box: box, up: false))
        #expect(plain.image.width == 10 && plain.image.height == 5 && plain.cacheKey == plainKey)
        let upscaled = try await rig.manager.loadImage(with: url, context: upContext(rig, box: box, up: true))
        #expect(upscaled.image.width == 40 && upscaled.image.height == 20 && upscaled.cacheKey == upKey)
        #expect(rig.cache.memoryImage(forKey: plainKey)?.width == 10)
        #expect(rig.cache.memoryImage(forKey: upKey)?.width == 40)
        // Served from memory under each key, each with its own size.
        let again = try await rig.manager.loadImage(with: url, context: upContext(rig, box: box, up: true))
        #expect(again.cacheType == .memory && again.image.width == 40)
        #expect(rig.loader.requestCount(for: url) == 1, "one download serves both thumbnails")
    }

    @Test(
        "shouldScaleUp from a cached original image (the manager resizes pixels it holds): scaled up too, within the budget"
    )
    func aCachedOriginalImageIsScaledUp() async throws {
        let rig = Rig()
        let url = testURL()
        let pixels = PixelBuffer(width: 6, height: 3, layout: .rgba8, bytes: [UInt8](repeating: 200, count: 72))
        rig.cache.seedMemory(Image(pixels: pixels), forKey: url.absoluteString)
        let box = PixelSize(width: 30, height: 30)
        let result = try await rig.manager.loadImage(
            with: url, options: .fromCacheOnly, context: upContext(rig, box: box, up: true))
        #expect(result.image.width == 30 && result.image.height == 15)
        #expect(result.image.pixels.pixel(x: 29, y: 14) == [200, 200, 200, 200], "area resampling keeps flat colour")
        #expect(rig.loader.requestCount == 0)

        let plainError = await rig.load(url, options: .fromCacheOnly).error
        #expect(plainError == nil, "the plain load is still served from memory")
    }

    /// A loader that hands back an image it made itself (no bytes to decode).
    private struct ImageMakingLoader: ImageLoader {
        let image: Image
        func canRequestImage(for url: URL) -> Bool { true }
        func requestImage(
            with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
            completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
        ) -> any ImageOperation {
            completion(.success(LoadedImageData(data: Data(), image: image)))
            return CancellableOperation()
        }
    }

    @Test(
        "shouldScaleUp on a loader's own image (pixels the manager resizes, no coder): scaled up, and refused over the pixel budget"
    )
    func aLoadersOwnImageIsScaledUpWithinTheBudget() async throws {
        let pixels = PixelBuffer(width: 8, height: 2, layout: .gray8, bytes: [UInt8](repeating: 90, count: 16))
        let manager = ImageManager(cache: RecordingCache(), loader: ImageMakingLoader(image: Image(pixels: pixels)))
        var context = ImageContext()
        context.imageThumbnailPixelSize = PixelSize(width: 32, height: 32)
        context.imageDecodeOptions = ImageDecodeOptions(allowsThumbnailUpscaling: true)
        let result = try await manager.loadImage(with: testURL(), context: context)
        #expect(result.image.width == 32 && result.image.height == 8)

        context.imageThumbnailPixelSize = PixelSize(width: 60_000, height: 60_000)
        context.imageDecodeOptions?.maxPixelCount = 1_000_000
        let recorder = DeliveryRecorder()
        manager.loadImage(with: testURL("huge"), context: context, completed: recorder.handler)
        let error = try #require(await recorder.waitForFinal()).error
        #expect(error?.code == .imageTooLarge, "60000x15000 is over the 1 MP budget: \(String(describing: error))")
    }

    @Test("shouldScaleUp through ImageManager with the decoder: a download over the budget once scaled up fails")
    func aDownloadWhoseUpscaleExceedsTheBudgetFails() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 4, height: 4)
        var context = upContext(rig, box: PixelSize(width: 5000, height: 5000), up: true)
        context.imageDecodeOptions?.maxPixelCount = 1_000_000
        let recorder = DeliveryRecorder()
        rig.manager.loadImage(with: url, context: context, completed: recorder.handler)
        let error = try #require(await recorder.waitForFinal()).error
        #expect(error?.code == .imageTooLarge)
    }
}
