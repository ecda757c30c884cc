/// Limits on a whole animation, on top of the per-frame pixel budget (``ImageDecodeOptions/maxPixelCount``).
///
/// A 23 KB GIF can declare a thousand frames on a 1000x1000 screen; each frame passes the per-frame budget, but
/// preloading them all takes 4 GB. These limits bound what one image may cost as a whole:
/// - ``maxFrameCount``: frames an animation may have; checked from the container before any pixel is decoded.
/// - ``maxPixelCount``: frames × canvas pixels an image may materialise at once (``ImageOptions/preloadAllFrames``,
///   a transformer with ``ImageOptions/transformAnimatedImage``, an encoder writing every frame); checked before
///   the first frame is decoded.
/// - ``maxWorkPixelCount``: pixels a coder may decode in one pass through an animation, counting pixels that are
///   clipped away (a frame far larger than its canvas, or lying outside it, still costs its decompression).
///
/// Over a limit the operation fails with ``ImageError/Code/imageTooLarge``, unless ``onExceeded`` is
/// ``Policy/firstFrameOnly``: a decode then returns the first frame as a still image (transformers and encoders
/// likewise process the first frame only). Value type; thread-safe.
public struct AnimationBudget: Hashable, Sendable {
    /// What happens when an animation is over budget.
    public enum Policy: Hashable, Sendable {
        /// Fail with ``ImageError/Code/imageTooLarge`` (default).
        case fail
        /// Keep the first frame only (a still image), as a thumbnail service usually wants.
        case firstFrameOnly
    }

    /// Default frame limit: 10,000 frames (7 minutes at 25 fps).
    public static let defaultMaxFrameCount = 10_000
    /// Default frames × canvas limit: 200 megapixels (800 MB as RGBA), twice the per-frame budget.
    public static let defaultMaxPixelCount = 200_000_000
    /// Default decoding work per pass: 500 megapixels of frame data (a few seconds of LZW on one core).
    public static let defaultMaxWorkPixelCount = 500_000_000

    /// The server-sane defaults above, failing when exceeded.
    public static let `default` = AnimationBudget()
    /// No limits (trusted input only).
    public static let unlimited = AnimationBudget(
        maxFrameCount: .max, maxPixelCount: .max, maxWorkPixelCount: .max)

    /// Frames an animation may have.
    public var maxFrameCount: Int
    /// Frames × canvas pixels an image may materialise at once.
    public var maxPixelCount: Int
    /// Frame pixels one pass through the animation may decode (clipped pixels included).
    public var maxWorkPixelCount: Int
    /// What to do when a limit is exceeded.
    public var onExceeded: Policy

    /// Creates a budget; the defaults are documented in the README's "Limits" section.
    public init(
        maxFrameCount: Int = AnimationBudget.defaultMaxFrameCount,
        maxPixelCount: Int = AnimationBudget.defaultMaxPixelCount,
        maxWorkPixelCount: Int = AnimationBudget.defaultMaxWorkPixelCount, onExceeded: Policy = .fail
    ) {
        self.maxFrameCount = maxFrameCount
        self.maxPixelCount = maxPixelCount
        self.maxWorkPixelCount = maxWorkPixelCount
        self.onExceeded = onExceeded
    }

    /// Throws ``ImageError/Code/imageTooLarge`` when `frameCount` frames are more than ``maxFrameCount``.
    public func checkFrameCount(_ frameCount: Int, stage: ImageError.Stage = .decode) throws(ImageError) {
        guard frameCount > maxFrameCount else { return }
        throw ImageError(
            .imageTooLarge, stage: stage,
            message: "the animation has more than \(maxFrameCount) frames (\(frameCount) seen)")
    }

    /// Throws ``ImageError/Code/imageTooLarge`` when `frameCount` frames of `pixelsPerFrame` pixels each exceed
    /// ``maxPixelCount`` or ``maxFrameCount``. Call it before materialising the frames.
    public func checkMaterialization(
        frameCount: Int, pixelsPerFrame: Int, stage: ImageError.Stage = .decode
    ) throws(ImageError) {
        try checkFrameCount(frameCount, stage: stage)
        let (total, overflow) = max(0, frameCount).multipliedReportingOverflow(by: max(0, pixelsPerFrame))
        guard overflow || total > maxPixelCount else { return }
        throw ImageError(
            .imageTooLarge, stage: stage,
            message:
                "\(frameCount) frames of \(pixelsPerFrame) pixels exceed the animation budget of \(maxPixelCount) pixels"
        )
    }

    /// Adds `pixels` of decoding work to `spent`; throws ``ImageError/Code/imageTooLarge`` past
    /// ``maxWorkPixelCount``. Coders call it before decoding a frame.
    public func spendWork(_ pixels: Int, from spent: inout Int, stage: ImageError.Stage = .decode) throws(ImageError) {
        let (total, overflow) = spent.addingReportingOverflow(max(0, pixels))
        guard !overflow, total <= maxWorkPixelCount else {
            throw ImageError(
                .imageTooLarge, stage: stage,
                message: "decoding the animation exceeds the work budget of \(maxWorkPixelCount) pixels")
        }
        spent = total
    }
}
