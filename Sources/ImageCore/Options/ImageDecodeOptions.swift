/// A pixel size.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Creates a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    /// "WxH".
    public var description: String { "\(width)x\(height)" }
}

/// What a coder must respect while decoding; built by the manager from ``ImageOptions`` and ``ImageContext``.
public struct ImageDecodeOptions: Hashable, Sendable {
    /// The default pixel budget: 100 megapixels (400 MB as RGBA).
    public static let defaultMaxPixelCount = 100_000_000

    /// Refuse, from the header and before allocating pixels, any image with more pixels than this
    /// (``ImageError/Code/imageTooLarge``). For animations the budget counts canvas pixels.
    public var maxPixelCount: Int
    /// Decode to fit inside this size (a thumbnail); nil decodes at full size. Upscales only with
    /// ``allowsThumbnailUpscaling``.
    public var thumbnailPixelSize: PixelSize?
    /// With a thumbnail size: keep the aspect ratio (fit inside) rather than stretch to the exact size.
    public var preserveAspectRatio: Bool
    /// With a thumbnail size: a source smaller than the thumbnail is scaled up to it (SDWebImage's
    /// `shouldScaleUp`). Off by default: a thumbnail is then never larger than its source.
    ///
    /// It changes the decoded image, so it is a part of the cache key (`-thumbnail(WxH,fit,up)`). The upscaled
    /// size counts against ``maxPixelCount``: ``checkPixelBudget(width:height:)`` refuses a source whose thumbnail
    /// would exceed it. Upscaling averages areas like downscaling (each output pixel is the weighted source pixels
    /// it covers), so edges stay hard; for smooth enlargement use ImageTransformers' resize.
    public var allowsThumbnailUpscaling: Bool
    /// Decode at a size whose RGBA pixels fit in this many bytes (``ImageOptions/scaleDownLargeImages``).
    public var scaleDownLimitBytes: Int?
    /// Decode only the first frame of an animation.
    public var firstFrameOnly: Bool
    /// Decode every frame up front rather than on demand.
    public var preloadAllFrames: Bool
    /// Rotate/flip pixels per the EXIF orientation (default). False keeps raw pixels and reports the orientation.
    public var applyOrientation: Bool
    /// Device scale factor the caller asked for; informational on a server.
    public var scaleFactor: Double
    /// Limits on a whole animation (frame count, frames × canvas, decoding work); see ``AnimationBudget``.
    public var animationBudget: AnimationBudget
    /// Options for custom coders (see ``CoderOptionKey``); those that change the image are part of the cache key.
    public var coderOptions: CoderOptions
    /// Convert pixels described by an ICC profile (and CMYK) to sRGB at decode, through the registered
    /// ``ColorConverter`` (see ``ColorConversion``); the delivered image then carries no profile. Off by default:
    /// pixels and profile are carried as the file has them. Part of the cache key (`decode(color(srgb))`).
    public var convertToSRGB: Bool

    /// The most frames an animation may have (``AnimationBudget/maxFrameCount``).
    public var maxFrameCount: Int {
        get { animationBudget.maxFrameCount }
        set { animationBudget.maxFrameCount = newValue }
    }
    /// The most frames × canvas pixels one image may hold decoded (``AnimationBudget/maxPixelCount``).
    public var maxAnimationPixelCount: Int {
        get { animationBudget.maxPixelCount }
        set { animationBudget.maxPixelCount = newValue }
    }
    /// The most frame pixels one pass through an animation may decode, clipped ones included
    /// (``AnimationBudget/maxWorkPixelCount``).
    public var maxAnimationWorkPixelCount: Int {
        get { animationBudget.maxWorkPixelCount }
        set { animationBudget.maxWorkPixelCount = newValue }
    }

    /// Creates decode options with server-safe defaults.
    public init(
        maxPixelCount: Int = ImageDecodeOptions.defaultMaxPixelCount, thumbnailPixelSize: PixelSize? = nil,
        preserveAspectRatio: Bool = true, allowsThumbnailUpscaling: Bool = false, scaleDownLimitBytes: Int? = nil,
        firstFrameOnly: Bool = false, preloadAllFrames: Bool = false, applyOrientation: Bool = true,
        scaleFactor: Double = 1, animationBudget: AnimationBudget = .default,
        coderOptions: CoderOptions = CoderOptions(), convertToSRGB: Bool = false
    ) {
        self.maxPixelCount = maxPixelCount
        self.thumbnailPixelSize = thumbnailPixelSize
        self.preserveAspectRatio = preserveAspectRatio
        self.allowsThumbnailUpscaling = allowsThumbnailUpscaling
        self.scaleDownLimitBytes = scaleDownLimitBytes
        self.firstFrameOnly = firstFrameOnly
        self.preloadAllFrames = preloadAllFrames
        self.applyOrientation = applyOrientation
        self.scaleFactor = scaleFactor
        self.animationBudget = animationBudget
        self.coderOptions = coderOptions
        self.convertToSRGB = convertToSRGB
    }

    /// Throws ``ImageError/Code/imageTooLarge`` when `width × height` exceeds the budget, or when the thumbnail
    /// of such a source would (only with ``allowsThumbnailUpscaling``, the one way a decode can grow).
    ///
    /// Coders call this with the header's size before they allocate anything. The upscaled size is checked for
    /// both orientations of the source, because a coder that applies EXIF orientation sizes the rotated image.
    public func checkPixelBudget(width: Int, height: Int) throws(ImageError) {
        guard width > 0, height > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "image declares size \(width)x\(height)")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > maxPixelCount {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "\(width)x\(height) exceeds the budget of \(maxPixelCount) pixels")
        }
        guard allowsThumbnailUpscaling, thumbnailPixelSize != nil else { return }
        for source in [(width, height), (height, width)] {
            let target = targetSize(forSourceWidth: source.0, height: source.1)
            if target.width > source.0 || target.height > source.1 { try checkUpscaledBudget(target) }
        }
    }

    /// Throws ``ImageError/Code/imageTooLarge`` when an upscaled `target` holds more pixels than the budget.
    ///
    /// For code that enlarges pixels it already holds (the manager resizing a cached original to an upscaled
    /// thumbnail); coders get the same check from ``checkPixelBudget(width:height:)``.
    public func checkUpscaledBudget(_ target: PixelSize) throws(ImageError) {
        let (pixels, overflow) = target.width.multipliedReportingOverflow(by: target.height)
        if overflow || pixels > maxPixelCount {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "the thumbnail scaled up to \(target) exceeds the budget of \(maxPixelCount) pixels")
        }
    }

    /// The size to decode to for a source of `width × height`, from the thumbnail size and scale-down budget.
    ///
    /// Returns the source size when neither applies. Never larger than the source, unless
    /// ``allowsThumbnailUpscaling`` is on: then a thumbnail size larger than the source is reached exactly (fill)
    /// or fitted inside (fit), as SDWebImage's `scaledSizeWithImageSize:scaleSize:preserveAspectRatio:shouldScaleUp:`
    /// computes it. The scale-down budget applies after the thumbnail size and only ever shrinks.
    public func targetSize(forSourceWidth width: Int, height: Int) -> PixelSize {
        var target = PixelSize(width: width, height: height)
        // Degenerate sources have nothing to scale (and would divide by zero below).
        guard width > 0, height > 0 else { return target }
        let upscales = allowsThumbnailUpscaling
        if let thumb = thumbnailPixelSize, thumb.width > 0, thumb.height > 0,
            upscales || thumb.width < width || thumb.height < height
        {
            if preserveAspectRatio {
                let scale = min(Double(thumb.width) / Double(width), Double(thumb.height) / Double(height))
                target = PixelSize(
                    width: Self.scaled(width, by: scale, atMost: upscales ? thumb.width : width),
                    height: Self.scaled(height, by: scale, atMost: upscales ? thumb.height : height))
            } else if upscales {
                target = thumb
            } else {
                target = PixelSize(width: min(thumb.width, width), height: min(thumb.height, height))
            }
        }
        // In Double: the product of two header-declared sides may not fit an Int.
        let bytes = Double(target.width) * Double(target.height) * 4
        if let limit = scaleDownLimitBytes, limit > 0, bytes > Double(limit) {
            let scale = (Double(limit) / bytes).squareRoot()
            target = PixelSize(
                width: max(1, min(target.width, Int(Double(target.width) * scale))),
                height: max(1, min(target.height, Int(Double(target.height) * scale))))
        }
        return target
    }

    /// `side × scale` rounded, at least 1 and at most `limit` (the source side, or the thumbnail side when
    /// upscaling: `side × scale` never exceeds it but for rounding, and the clamp keeps a huge thumbnail side
    /// from overflowing the conversion to `Int`).
    private static func scaled(_ side: Int, by scale: Double, atMost limit: Int) -> Int {
        let value = (Double(side) * scale).rounded()
        guard value.isFinite else { return min(side, limit) }
        return value >= Double(limit) ? limit : max(1, Int(value))
    }
}
