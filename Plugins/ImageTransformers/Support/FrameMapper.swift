import ImageCore

/// Applies a per-frame pixel function to every frame of an image.
///
/// Animated images whose later frames are not held (an ``AnimatedImageProvider`` decodes them on demand) are
/// materialised through ``Image/frame(at:)`` first, so the result holds every frame and no provider. Durations,
/// loop count, format and metadata (orientation, ICC profile, EXIF) are kept; `metadata.isTransformed` is set.
/// Frames are processed one after another; each frame's pixel work may itself run in parallel stripes.
enum FrameMapper {
    /// Returns `image` with `body` applied to each frame's pixels.
    ///
    /// - Throws: the provider's ``ImageError`` when a frame cannot be decoded, or whatever `body` throws.
    static func map(_ image: Image, _ body: (PixelBuffer) throws -> PixelBuffer) throws -> Image {
        var frames: [ImageFrame] = []
        frames.reserveCapacity(image.frameCount)
        for index in 0..<image.frameCount {
            let frame = try image.frame(at: index)
            frames.append(ImageFrame(pixels: try body(frame.pixels), duration: frame.duration))
        }
        var metadata = image.metadata
        metadata.isTransformed = true
        return Image(frames: frames, loopCount: image.loopCount, format: image.format, metadata: metadata)
    }
}
