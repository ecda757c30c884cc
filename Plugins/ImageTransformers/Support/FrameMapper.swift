import ImageCore

/// Applies a per-frame pixel function to every frame of an image.
///
/// Animated images whose later frames are not held (an ``AnimatedImageProvider`` decodes them on demand) are
/// materialised through ``Image/frame(at:)`` first, so the result holds every frame and no provider. Durations,
/// loop count, format and metadata (orientation, ICC profile, EXIF) are kept; `metadata.isTransformed` is set.
/// Frames are processed one after another; each frame's pixel work may itself run in parallel stripes.
///
/// The result holds every frame, so before any frame is decoded or transformed the animation must fit the
/// image's ``Image/animationBudget`` (frame count, frames × the larger of canvas and output): over it the map
/// throws ``ImageError/Code/imageTooLarge``, or transforms the first frame only when the budget's policy is
/// ``AnimationBudget/Policy/firstFrameOnly``.
enum FrameMapper {
    /// Returns `image` with `body` applied to each frame's pixels.
    ///
    /// - Parameter outputSize: the size `body` produces from a canvas-sized frame, when known up front (used
    ///   for the budget check; the canvas size is assumed otherwise, then checked again after the first frame).
    /// - Throws: ``ImageError`` `imageTooLarge` over the animation budget, the provider's ``ImageError`` when a
    ///   frame cannot be decoded, or whatever `body` throws.
    static func map(
        _ image: Image, outputSize: PixelSize? = nil, _ body: (PixelBuffer) throws -> PixelBuffer
    ) throws -> Image {
        var count = try image.framesWithinBudget(
            outputPixelsPerFrame: outputSize.map { pixels(of: $0) }, stage: .transform)
        var frames: [ImageFrame] = []
        for index in 0..<count {
            let frame = try image.frame(at: index)
            let output = try body(frame.pixels)
            if index == 0 && count > 1 {
                // The first result tells the real output size (a rotation may grow the canvas): check again.
                count = try image.framesWithinBudget(
                    outputPixelsPerFrame: pixels(of: PixelSize(width: output.width, height: output.height)),
                    stage: .transform)
                frames.reserveCapacity(count)
            }
            frames.append(ImageFrame(pixels: output, duration: count > 1 ? frame.duration : 0))
        }
        var metadata = image.metadata
        metadata.isTransformed = true
        return Image(
            frames: frames, loopCount: image.loopCount, format: image.format, metadata: metadata,
            animationBudget: image.animationBudget)
    }

    private static func pixels(of size: PixelSize) -> Int {
        let (product, overflow) = size.width.multipliedReportingOverflow(by: size.height)
        return overflow ? .max : product
    }
}
