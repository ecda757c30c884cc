import Foundation
import ImageCore

/// Decodes and encodes WebP (lossy, lossless, alpha, animated) with libwebp, libwebpdemux and libwebpmux.
///
/// Register it with `CodersManager.shared.addCoder(WebPCoder.shared)`. Stills decode with `WebPDecode` straight into
/// the pixel buffer (RGBA with straight alpha when the file has alpha, else RGB); thumbnail and scale-down sizes use
/// libwebp's scaled decoding. Animations are composited by `WebPAnimDecoder` (blend and dispose per frame) into RGBA
/// canvases; decode returns the first frame plus an on-demand provider unless
/// ``/ImageCore/ImageDecodeOptions/preloadAllFrames`` or ``/ImageCore/ImageDecodeOptions/firstFrameOnly`` is set.
/// Durations of 10 ms or less play at 100 ms, as in browsers; the loop count is the file's (0 forever). The ICC profile
/// lands in ``/ImageCore/ImageMetadata/iccProfile``.
///
/// Threading: stateless and thread-safe; each call owns its libwebp objects. Calls block: run them on the decode pool.
/// Errors: ``/ImageCore/ImageError`` `badImageData` (libwebp's status as the cause), `imageTooLarge` (canvas over
/// ``/ImageCore/ImageDecodeOptions/maxPixelCount``, checked from the header before any pixel allocation),
/// `encodeFailed`.
public final class WebPCoder: ProgressiveImageCoder, AnimatedImageCoder, ReportingImageCoder, Sendable {
    /// The shared instance to register.
    public static let shared = WebPCoder()

    /// Creates a coder; ``shared`` is usually all you need.
    public init() {}

    /// True for data starting with `RIFF` and `WEBP`.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .webp }

    /// True for ``/ImageCore/ImageFormat/webp``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .webp }

    /// Lossless WebP is written exact (the colour under transparent pixels kept), stills and animations.
    public func encodesExactly(to format: ImageFormat) -> Bool { format == .webp }

    /// Reads the canvas size from the header (`WebPGetFeatures`) and the frame count from the chunks (1 for a still;
    /// nil when an animation's chunks end early); nil when it is not a readable WebP header.
    public func probe(_ data: Data) -> ImageProperties? {
        guard canDecode(data), let header = try? WebPHeader.read(data)
        else { return nil }
        return ImageProperties(
            format: .webp, width: header.width, height: header.height,
            frameCount: WebPFrameCount.count(data, hasAnimation: header.hasAnimation))
    }

    /// Decodes `data` per `options` (thumbnail via scaled decoding, frames per the animation options).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let header = try WebPHeader.read(data)
        try options.checkPixelBudget(width: header.width, height: header.height)
        let target = options.targetSize(forSourceWidth: header.width, height: header.height)
        if header.hasAnimation {
            return try Self.decodeAnimation(data, header: header, target: target, options: options)
        }
        let bytes = WebPBytes(data)
        let container = try WebPDemuxHandle(bytes: bytes)
        let pixels = try WebPStillDecoder.decode(bytes, header: header, target: target)
        let metadata = ImageMetadata(
            iccProfile: container.iccProfile, sourcePixelWidth: header.width, sourcePixelHeight: header.height)
        return Image(pixels: pixels, format: .webp, metadata: metadata)
    }

    /// Opens an animated (or still) WebP as an animation; reads frame count, loop count and durations only.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge`.
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        let header = try WebPHeader.read(data)
        try options.checkPixelBudget(width: header.width, height: header.height)
        let handle = try WebPAnimDecoderHandle(bytes: WebPBytes(data), budget: options.animationBudget)
        try options.animationBudget.checkFrameCount(handle.frameCount)
        let info = Self.animationInfo(handle)
        let target = options.targetSize(forSourceWidth: info.canvas.width, height: info.canvas.height)
        return WebPAnimatedProvider(handle: handle, info: info, target: target)
    }

    /// True when `data` starts like a WebP file.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// A `WebPIDecoder`-based decoder that shows rows as they arrive (ImageCore's ``/ImageCore/IncrementalDecoder``
    /// with WebP's step).
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: WebPIncrementalStep(coder: self, options: options))
    }

    /// Encodes `image` as WebP: lossy at `quality` or lossless, animated when it has several frames and
    /// `firstFrameOnly` is off. `maxPixelSize` downsizes first; `maxFileSize` searches the lossy quality
    /// downwards and returns the smallest result when even quality 0 is too big.
    /// - Throws: ``/ImageCore/ImageError`` `encodeFailed` (e.g. over WebP's 16383-pixel limit).
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .webp else {
            throw ImageError(.noCoder, stage: .encode, message: "WebPCoder cannot encode \(format)")
        }
        return try WebPEncoder.encode(image, options: options).data
    }

    /// ``encode(_:as:options:)``, reporting the quality used (chosen by a
    /// ``/ImageCore/ImageEncodeOptions/perceptualTarget`` on the first frame, or lowered by `maxFileSize`) and the
    /// perceptual search's report.
    ///
    /// - Throws: as ``encode(_:as:options:)``; `noPerceptualMetric` for a target without a registered metric.
    public func encodeReporting(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        guard format == .webp else {
            throw ImageError(.noCoder, stage: .encode, message: "WebPCoder cannot encode \(format)")
        }
        return try WebPEncoder.encode(image, options: options)
    }

    // MARK: Animation assembly

    /// Canvas, loop count and the durations of the first `frames` frames (all when nil).
    static func animationInfo(_ handle: WebPAnimDecoderHandle, frames: Int? = nil) -> WebPAnimationInfo {
        let count = min(frames ?? handle.frameCount, handle.frameCount)
        var durations = handle.demux.map { WebPDemuxHandle.durations($0, limit: count) } ?? []
        if durations.count != count {
            durations = Array((durations + Array(repeating: 0.1, count: count)).prefix(count))
        }
        return WebPAnimationInfo(
            canvas: PixelSize(width: handle.canvasWidth, height: handle.canvasHeight), loopCount: handle.loopCount,
            durations: durations)
    }

    private static func decodeAnimation(
        _ data: Data, header: WebPHeader, target: PixelSize, options: ImageDecodeOptions
    ) throws(ImageError) -> Image {
        let budget = options.animationBudget
        let handle = try WebPAnimDecoderHandle(bytes: WebPBytes(data), budget: budget)
        var count = options.firstFrameOnly ? 1 : handle.frameCount
        do throws(ImageError) {
            // The frame limit always applies (the index alone grows with it); frames × canvas when all are held.
            try budget.checkFrameCount(count)
            if count > 1 && options.preloadAllFrames {
                try budget.checkMaterialization(frameCount: count, pixelsPerFrame: target.width * target.height)
                var work = 0
                try budget.spendWork(count * handle.canvasWidth * handle.canvasHeight, from: &work)
            }
        } catch {
            guard budget.onExceeded == .firstFrameOnly else { throw error }
            count = 1
        }
        let info = animationInfo(handle, frames: count)
        let metadata = ImageMetadata(
            iccProfile: handle.demux.flatMap { WebPDemuxHandle.iccProfile($0) }, sourcePixelWidth: header.width,
            sourcePixelHeight: header.height)
        let still = count == 1
        if still || options.preloadAllFrames {
            var frames: [ImageFrame] = []
            for index in 0..<count {
                frames.append(
                    try handle.frame(at: index, target: target, duration: still ? 0 : info.durations[index]))
            }
            return Image(
                frames: frames, loopCount: info.loopCount, format: .webp, metadata: metadata, animationBudget: budget)
        }
        let first = try handle.frame(at: 0, target: target, duration: info.durations[0])
        return Image(
            frames: [first], frameCount: count, loopCount: info.loopCount, format: .webp, metadata: metadata,
            animatedProvider: WebPAnimatedProvider(handle: handle, info: info, target: target),
            animationBudget: budget)
    }
}
