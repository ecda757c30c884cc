/// One frame of an image: its pixels and, for animations, how long it stays on screen.
public struct ImageFrame: Hashable, Sendable {
    /// The frame's pixels, the size of the canvas (animated frames are already composited).
    public var pixels: PixelBuffer
    /// Display time in seconds; 0 for still images. Always finite and between 0 and ``maximumDuration``.
    public var duration: Double {
        didSet { duration = Self.sanitized(duration) }
    }

    /// The longest frame duration kept: one day. Longer, infinite or NaN durations are clamped, so an encoder
    /// converting durations to integer milliseconds or centiseconds can never overflow.
    public static let maximumDuration: Double = 86_400

    /// Creates a frame; a negative or NaN `duration` becomes 0, an infinite or huge one ``maximumDuration``.
    public init(pixels: PixelBuffer, duration: Double = 0) {
        self.pixels = pixels
        self.duration = Self.sanitized(duration)
    }

    private static func sanitized(_ duration: Double) -> Double {
        guard !duration.isNaN, duration > 0 else { return 0 }
        return min(duration, maximumDuration)
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
    /// The whole-animation limits the image was decoded under; transformers with
    /// ``ImageOptions/transformAnimatedImage`` and encoders check them before materialising every frame.
    public let animationBudget: AnimationBudget

    /// Creates an image from frames in memory.
    ///
    /// - Parameters:
    ///   - frames: at least one frame; all frames must have the size of the first.
    ///   - frameCount: the animation's frame count when `animatedProvider` supplies frames not in `frames`.
    ///   - loopCount: how many times the animation plays; 0 means forever.
    ///   - format: the format the bytes were in (``ImageFormat/undefined`` for an image made in memory).
    ///   - metadata: orientation, ICC profile and EXIF of the source.
    ///   - animatedProvider: decodes the frames past `frames` on demand; nil when `frames` holds them all.
    ///   - animationBudget: the limits later whole-animation work (transform, encode) must respect.
    /// - Precondition: `frames` is not empty.
    public init(
        frames: [ImageFrame], frameCount: Int? = nil, loopCount: Int = 0, format: ImageFormat = .undefined,
        metadata: ImageMetadata = ImageMetadata(), animatedProvider: (any AnimatedImageProvider)? = nil,
        animationBudget: AnimationBudget = .default
    ) {
        precondition(!frames.isEmpty, "an Image needs at least one frame")
        self.frames = frames
        self.width = frames[0].pixels.width
        self.height = frames[0].pixels.height
        self.frameCount = max(frameCount ?? frames.count, frames.count)
        self.loopCount = max(0, loopCount)
        self.format = format
        self.metadata = metadata
        self.animatedProvider = self.frameCount > frames.count ? animatedProvider : nil
        self.animationBudget = animationBudget
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
    ///
    /// A frame counts the memory its pixels hold resident, which can exceed its ``PixelBuffer/byteCount``: pixels
    /// in huge pages (``PixelPool/usesHugePages``) that end inside a huge page hold that whole page (a 1920x1080
    /// RGBA frame, 8,294,400 bytes, holds 8 MiB). So a memory cache's cost limit bounds resident memory.
    public var memoryCost: Int {
        frames.reduce(0) { $0 + $1.pixels.residentByteCount } + (animatedProvider?.retainedByteCount ?? 0)
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

    /// How many frames whole-animation work (a transform of every frame, an encode) may process under
    /// ``animationBudget``, producing frames of `outputPixelsPerFrame` pixels (the canvas when nil).
    ///
    /// Returns ``frameCount`` when within budget, 1 when over budget and the policy is
    /// ``AnimationBudget/Policy/firstFrameOnly``. Call it before decoding any frame.
    /// - Throws: ``ImageError/Code/imageTooLarge`` (at `stage`) when over budget and the policy is `fail`.
    public func framesWithinBudget(
        outputPixelsPerFrame: Int? = nil, stage: ImageError.Stage
    ) throws(ImageError) -> Int {
        guard frameCount > 1 else { return frameCount }
        let (canvas, overflow) = width.multipliedReportingOverflow(by: height)
        let perFrame = max(overflow ? .max : canvas, outputPixelsPerFrame ?? 0)
        do {
            try animationBudget.checkMaterialization(frameCount: frameCount, pixelsPerFrame: perFrame, stage: stage)
            return frameCount
        } catch {
            if animationBudget.onExceeded == .firstFrameOnly { return 1 }
            throw error
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
            animatedProvider: keepsProvider ? animatedProvider : nil, animationBudget: animationBudget)
    }
}

extension Image: CustomStringConvertible {
    /// A short summary: format, size, frames and cost.
    public var description: String {
        "Image(\(format) \(width)x\(height), \(frameCount) frame(s), \(memoryCost) bytes)"
    }
}
