/// One frame of an image: its pixels and, for animations, how long it stays on screen.
public struct ImageFrame: Hashable, Sendable {
    /// The frame's pixels, the size of the canvas (animated frames are already composited).
    public var pixels: PixelBuffer
    /// Display time in seconds; 0 for still images.
    public var duration: Double

    /// Creates a frame.
    public init(pixels: PixelBuffer, duration: Double = 0) {
        self.pixels = pixels
        self.duration = duration
    }
}

/// A decoded image: pixels, frames, the format it came from and its metadata.
///
/// An immutable final class, so it is `Sendable`, cheap to pass between threads and caches, and has an identity
/// (the memory cache's weak table relies on it). Still images hold one frame. Animated images hold either every
/// frame (decoded with ``ImageOptions/preloadAllFrames``) or only the first, with an ``AnimatedImageProvider``
/// that decodes the others on demand through ``frame(at:)``. ``memoryCost`` counts what is actually held.
public final class Image: Sendable {
    /// Frames held in memory; never empty. `frames[0]` is the poster frame.
    public let frames: [ImageFrame]
    /// Canvas width in pixels (every frame has this size).
    public let width: Int
    /// Canvas height in pixels.
    public let height: Int
    /// Number of frames in the animation (1 for still images), whether or not all are held.
    public let frameCount: Int
    /// Times the animation repeats; 0 means forever (GIF and WebP semantics).
    public let loopCount: Int
    /// The format the bytes were in (``ImageFormat/undefined`` for images made in memory).
    public let format: ImageFormat
    /// Orientation, colour profile and other facts from the file.
    public let metadata: ImageMetadata
    /// Decodes frames not held in ``frames``; nil when every frame is held.
    public let animatedProvider: (any AnimatedImageProvider)?

    /// Creates an image from frames in memory.
    ///
    /// - Parameters:
    ///   - frames: at least one frame; all frames must have the size of the first.
    ///   - frameCount: the animation's frame count when `animatedProvider` supplies frames not in `frames`.
    /// - Precondition: `frames` is not empty.
    public init(
        frames: [ImageFrame], frameCount: Int? = nil, loopCount: Int = 0, format: ImageFormat = .undefined,
        metadata: ImageMetadata = ImageMetadata(), animatedProvider: (any AnimatedImageProvider)? = nil
    ) {
        precondition(!frames.isEmpty, "an Image needs at least one frame")
        self.frames = frames
        self.width = frames[0].pixels.width
        self.height = frames[0].pixels.height
        self.frameCount = max(frameCount ?? frames.count, frames.count)
        self.loopCount = loopCount
        self.format = format
        self.metadata = metadata
        self.animatedProvider = self.frameCount > frames.count ? animatedProvider : nil
    }

    /// Creates a still image from one pixel buffer.
    public convenience init(
        pixels: PixelBuffer, format: ImageFormat = .undefined, metadata: ImageMetadata = ImageMetadata()
    ) {
        self.init(frames: [ImageFrame(pixels: pixels)], format: format, metadata: metadata)
    }

    /// The poster frame's pixels.
    public var pixels: PixelBuffer { frames[0].pixels }

    /// True when the image has more than one frame.
    public var isAnimated: Bool { frameCount > 1 }

    /// Bytes of pixel memory this image holds (its frames plus what an on-demand provider retains); the memory
    /// cache's cost.
    public var memoryCost: Int {
        frames.reduce(0) { $0 + $1.pixels.byteCount } + (animatedProvider?.retainedByteCount ?? 0)
    }

    /// Returns the frame at `index`, decoding it through ``animatedProvider`` when it is not held.
    ///
    /// Decoding may block: call it off the cooperative pool for large animations.
    /// - Throws: ``ImageError`` with code `badImageData` when `index` is out of range or decoding fails.
    public func frame(at index: Int) throws -> ImageFrame {
        if index >= 0 && index < frames.count { return frames[index] }
        guard index >= 0 && index < frameCount, let provider = animatedProvider else {
            throw ImageError(.badImageData, stage: .decode, message: "frame \(index) out of range 0..<\(frameCount)")
        }
        do {
            return try provider.frame(at: index)
        } catch {
            throw ImageError.wrap(error, as: .badImageData, stage: .decode)
        }
    }

    /// Returns a copy with other metadata (for example after a transformer changed the pixels).
    public func with(
        frames newFrames: [ImageFrame]? = nil, metadata newMetadata: ImageMetadata? = nil,
        format newFormat: ImageFormat? = nil
    ) -> Image {
        let keepsProvider = newFrames == nil
        return Image(
            frames: newFrames ?? frames, frameCount: keepsProvider ? frameCount : nil, loopCount: loopCount,
            format: newFormat ?? format, metadata: newMetadata ?? metadata,
            animatedProvider: keepsProvider ? animatedProvider : nil)
    }
}

extension Image: CustomStringConvertible {
    /// A short summary: format, size, frames and cost.
    public var description: String {
        "Image(\(format) \(width)x\(height), \(frameCount) frame(s), \(memoryCost) bytes)"
    }
}
