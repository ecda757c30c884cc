import Foundation
import ImageCore

/// Decodes and encodes GIF (87a and 89a, static and animated) with giflib.
///
/// Register it with `CodersManager.shared.addCoder(GIFCoder.shared)`. Decoding composites every frame onto the logical
/// screen (RGBA, straight alpha, transparent start), honours all disposal methods, clips frames that reach outside the
/// screen, reads the NETSCAPE2.0 loop count (1 when absent, 0 forever) and clamps delays of 10 ms or less to 100 ms as
/// browsers do. Animated decodes return the first frame plus an on-demand provider unless
/// ``/ImageCore/ImageDecodeOptions/preloadAllFrames`` or ``/ImageCore/ImageDecodeOptions/firstFrameOnly`` is set. A
/// file that ends after a whole frame without its trailer decodes, as in browsers, marked
/// ``/ImageCore/ImageMetadata/isIncomplete``; one that ends inside a frame fails.
///
/// Threading: stateless and thread-safe; each call uses its own giflib handle. Calls block: run them on the decode
/// pool, not the cooperative pool. Errors: ``/ImageCore/ImageError`` `badImageData` (giflib's code and text as the
/// cause), `imageTooLarge` (canvas or any frame over ``/ImageCore/ImageDecodeOptions/maxPixelCount``, checked before
/// any pixel allocation), `encodeFailed`.
public final class GIFCoder: ProgressiveImageCoder, AnimatedImageCoder, Sendable {
    /// The shared instance to register.
    public static let shared = GIFCoder()

    /// Creates a coder; ``shared`` is usually all you need.
    public init() {}

    /// True for data starting with `GIF87a` or `GIF89a`.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .gif }

    /// True for ``/ImageCore/ImageFormat/gif``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .gif }

    /// Reads the logical screen size from the first 10 bytes, and the frame count by walking the blocks (nil when
    /// the bytes end before the trailer); nil when they are not a GIF header.
    public func probe(_ data: Data) -> ImageProperties? {
        guard data.count >= 10, canDecode(data) else { return nil }
        let b = [UInt8](data.prefix(10))
        return ImageProperties(
            format: .gif, width: Int(b[6]) | Int(b[7]) << 8, height: Int(b[8]) | Int(b[9]) << 8,
            frameCount: GIFFrameCount.count(data))
    }

    /// Decodes `data`: the first frame plus a provider, every frame, or only the first, per `options`.
    ///
    /// Thumbnail and scale-down sizes are met by decoding at full size and area-averaging each frame down.
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let bytes = [UInt8](data)
        let structure = try GIFStructure.scan(bytes, options: options)
        return try Self.makeImage(bytes: bytes, structure: structure, options: options, isPartial: false)
    }

    /// Opens `data` as an animation (frame index only; no pixels are decoded).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge`.
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        let bytes = [UInt8](data)
        let structure = try GIFStructure.scan(bytes, options: options)
        if structure.exceededFrameLimit {
            // The caller asked for the animation itself: a truncated frame list would misrepresent it.
            try options.animationBudget.checkFrameCount(options.maxFrameCount + 1)
        }
        let target = options.targetSize(forSourceWidth: structure.width, height: structure.height)
        return GIFAnimatedProvider(
            bytes: bytes, structure: structure, target: target, budget: options.animationBudget, compositor: nil)
    }

    /// True when `data` starts like a GIF (the header may still be incomplete).
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// A decoder that shows the first frame once its bytes are complete (ImageCore's ``/ImageCore/IncrementalDecoder``
    /// with GIF's step).
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: GIFIncrementalStep(coder: self, options: options))
    }

    /// Encodes `image` as a GIF (animated when it has several frames and `firstFrameOnly` is off).
    ///
    /// Up to 256 colours (255 plus transparency) are kept exactly; more are reduced by median cut. Alpha below
    /// 128 becomes the transparent index. `maxPixelSize` downsizes first; `quality` and `maxFileSize` do not
    /// apply (GIF has no quality knob).
    /// - Throws: ``/ImageCore/ImageError`` `encodeFailed`.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .gif else {
            throw ImageError(.noCoder, stage: .encode, message: "GIFCoder cannot encode \(format)")
        }
        return try GIFEncoder.encode(image, options: options)
    }

    // MARK: Assembly shared by decode and the incremental decoder

    static func makeImage(
        bytes: [UInt8], structure: GIFStructure, options: ImageDecodeOptions, isPartial: Bool
    ) throws(ImageError) -> Image {
        let target = options.targetSize(forSourceWidth: structure.width, height: structure.height)
        let budget = options.animationBudget
        var count = options.firstFrameOnly || isPartial || structure.exceededFrameLimit ? 1 : structure.frames.count
        if count > 1 && options.preloadAllFrames {
            // Every frame will be held and decoded once: refuse before any pixel is decoded.
            do throws(ImageError) {
                try budget.checkMaterialization(frameCount: count, pixelsPerFrame: target.width * target.height)
                var work = 0
                try budget.spendWork(structure.workPixels(frames: count), from: &work)
            } catch {
                guard budget.onExceeded == .firstFrameOnly else { throw error }
                count = 1
            }
        }
        let compositor = try GIFCompositor(bytes: bytes, structure: structure, budget: budget)
        let metadata = ImageMetadata(
            iccProfile: structure.iccProfile, sourcePixelWidth: structure.width, sourcePixelHeight: structure.height,
            isPartial: isPartial, isIncomplete: !isPartial && structure.endsBeforeTrailer)
        let still = count == 1
        func frame(_ index: Int) throws(ImageError) -> ImageFrame {
            makeFrame(
                try compositor.canvas(at: index), target: target, duration: still ? 0 : structure.frames[index].duration
            )
        }
        if still || options.preloadAllFrames {
            var frames: [ImageFrame] = []
            for index in 0..<count { frames.append(try frame(index)) }
            return Image(
                frames: frames, loopCount: structure.loopCount, format: .gif, metadata: metadata,
                animationBudget: budget)
        }
        let first = try frame(0)
        let provider = GIFAnimatedProvider(
            bytes: bytes, structure: structure, target: target, budget: budget, compositor: compositor)
        return Image(
            frames: [first], frameCount: count, loopCount: structure.loopCount, format: .gif, metadata: metadata,
            animatedProvider: provider, animationBudget: budget)
    }

    /// The frame at `target` size (see ``/ImageCore/CompositingCanvas/frame(target:)``).
    static func makeFrame(_ canvas: CompositingCanvas, target: PixelSize, duration: Double) -> ImageFrame {
        ImageFrame(pixels: canvas.frame(target: target), duration: duration)
    }
}
