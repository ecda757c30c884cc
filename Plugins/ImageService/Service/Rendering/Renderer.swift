import Foundation
import ImageCore
import ImageServiceQuery
import ImageTransformers

/// Turns source bytes into thumbnail bytes: decode (shrinking on load), cut and scale, encode — once each.
///
/// Decode: the coders get a thumbnail size (``RenderPlan/decodeTarget(fit:box:storedSize:)``), so a JPEG decodes
/// through libjpeg-turbo's DCT scaling and a WebP through libwebp's scaler; EXIF orientation is applied; an
/// animated source is decoded as its first frame unless the request keeps the animation. The pixel budget (per
/// frame, from the header), the frame limit and the animation's summed pixels are the SDK's budgets, set from
/// ``SourceLimits``. Then the exact step: a crop at the gravity (``SmartCrop`` for `smart`) and a Lanczos-3
/// resize when the decoder's size is not already the output size. Encode: the output format from
/// ``ImageServiceQuery/OutputEncoding``, the quality for that format, metadata stripped (the pixels were converted to
/// sRGB at decode, so no ICC profile is needed; the encoders write no EXIF or XMP).
///
/// All of it runs as one job on the manager's CPU pool (never on the cooperative pool or an event loop), and each
/// stage's time is measured. Thread-safe.
struct Renderer: Sendable {
    /// What one render produced.
    struct Output: Sendable {
        /// The encoded thumbnail, or a placeholder's UTF-8 string.
        let data: Data
        /// Its `Content-Type`.
        let contentType: String
        /// Its format's name for spans and logs (`jpeg`, `blurhash` …).
        let formatName: String
        /// Its size.
        let size: PixelSize
        /// Its frame count.
        let frameCount: Int
        /// False when the source's bytes ended before its image did (a file cut short at the origin): the decoder
        /// filled the rest, so the thumbnail is not the source's and must not be kept as it.
        let isComplete: Bool
        /// Seconds spent decoding, transforming and encoding.
        let decodeSeconds: Double
        let resizeSeconds: Double
        let encodeSeconds: Double
    }

    let coders: CodersManager
    let pool: WorkPool
    let limits: SourceLimits
    let encoding: EncodingSettings

    /// Renders `options` from `source` in `encoding`: three jobs on the CPU pool (decode, transform, encode), each
    /// a span of its own. A cancelled task (its deadline passed) stops waiting at once; a stage not started yet
    /// never runs, and one running finishes alone with its result dropped.
    ///
    /// - Throws: the SDK's ``ImageCore/ImageError`` (`badImageData`, `noCoder`, `imageTooLarge`, `encodeFailed`,
    ///   …), or `CancellationError`.
    func render(
        _ source: Data, options: ThumbnailOptions, encoding output: OutputEncoding, tracer: StageTracer
    ) async throws -> Output {
        let coders = coders
        let limits = limits
        let settings = encoding
        let decoded = try await tracer.span("decode") { span in
            let decoded = try await pool.runCancellable {
                try Self.decode(source, options: options, output: output, coders: coders, limits: limits)
            }
            span.attributes["image.decoded_size"] = "\(decoded.image.width)x\(decoded.image.height)"
            if decoded.image.metadata.isIncomplete { span.attributes["image.incomplete"] = true }
            span.attributes["image.frames"] = decoded.image.frameCount
            return decoded
        }
        let transformed = try await tracer.span("transform") { _ in
            try await pool.runCancellable { try Self.transform(decoded) }
        }
        return try await tracer.span("encode") { span in
            let encoded = try await pool.runCancellable {
                try Self.encode(transformed, decoded: decoded, output: output, coders: coders, settings: settings)
            }
            span.attributes["image.format"] = encoded.formatName
            span.attributes["image.bytes"] = encoded.data.count
            return encoded
        }
    }

    /// What the decode stage hands on.
    struct Decoded: Sendable {
        let image: Image
        let options: ThumbnailOptions
        let sourceFormat: ImageFormat
        let seconds: Double
    }

    /// What the transform stage hands on.
    struct Transformed: Sendable {
        let image: Image
        let output: PixelSize
        let seconds: Double
    }

    private static func decode(
        _ source: Data, options: ThumbnailOptions, output: OutputEncoding, coders: CodersManager, limits: SourceLimits
    ) throws -> Decoded {
        let clock = ContinuousClock()
        var options = options
        // An output that can't animate (a still format, a placeholder): decode and scale the first frame only.
        switch output {
        case .format(let format) where ![.gif, .webp, .avif].contains(format): options.animated = false
        case .placeholder: options.animated = false
        case .format, .jpegOrPNG, .source: break
        }
        let probe = coders.probe(source)
        if options.animated, let probe, let frames = probe.frameCount, frames > 1 {
            try limits.checkAnimation(frames: frames, width: probe.width, height: probe.height)
        }
        let target = RenderPlan.decodeTarget(
            fit: options.fit, box: options.box,
            storedSize: probe.map { PixelSize(width: $0.width, height: $0.height) })
        var decodeOptions = limits.decodeOptions(firstFrameOnly: !options.animated)
        decodeOptions.thumbnailPixelSize = target.size
        decodeOptions.preserveAspectRatio = target.preserveAspectRatio

        let start = clock.now
        let decoded = try coders.decode(source, options: decodeOptions)
        if options.animated, decoded.frameCount > 1 {
            // The probe may not know the frame count (GIF, WebP): the decoded image does, before frames are drawn.
            let canvas = uprightSourceSize(decoded) ?? PixelSize(width: decoded.width, height: decoded.height)
            try limits.checkAnimation(frames: decoded.frameCount, width: canvas.width, height: canvas.height)
        }
        return Decoded(
            image: decoded, options: options, sourceFormat: probe?.format ?? decoded.format,
            seconds: (clock.now - start).seconds)
    }

    private static func transform(_ decoded: Decoded) throws -> Transformed {
        let clock = ContinuousClock()
        let start = clock.now
        let options = decoded.options
        let source = decoded.image
        let decodedSize = PixelSize(width: source.width, height: source.height)
        let plan = RenderPlan(
            fit: options.fit, box: options.box, gravity: options.gravity, enlarge: options.enlarge,
            decoded: decodedSize, source: uprightSourceSize(source) ?? decodedSize,
            smartOrigin: { window in SmartCrop.origin(of: window, in: source.pixels) })
        var image = source
        if let crop = plan.crop {
            image = try CropTransformer(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
                .transform(image, forKey: "")
        }
        if image.width != plan.output.width || image.height != plan.output.height {
            image = try ResizeTransformer(size: plan.output, mode: .fill, filter: .lanczos3).transform(
                image, forKey: "")
        }
        image = image.with(metadata: strippedMetadata(image.metadata))
        return Transformed(image: image, output: plan.output, seconds: (clock.now - start).seconds)
    }

    private static func encode(
        _ transformed: Transformed, decoded: Decoded, output: OutputEncoding, coders: CodersManager,
        settings: EncodingSettings
    ) throws -> Output {
        let clock = ContinuousClock()
        let image = transformed.image
        let options = decoded.options
        let start = clock.now
        let canEncode = { (format: ImageFormat) in coders.canEncode(to: format) }
        guard let format = output.format(for: image, sourceFormat: decoded.sourceFormat, canEncode: canEncode) else {
            guard case .placeholder(let kind) = output else { throw ImageError(.encodeFailed, stage: .encode) }
            // The hash of the thumbnail as the request cut it (each reduces it further to the few pixels it reads).
            let text =
                switch kind {
                case .blurhash: try BlurHash.encode(image)
                case .thumbhash: try image.thumbHash()
                }
            return Output(
                data: Data(text.utf8), contentType: Placeholder.contentType, formatName: kind.rawValue,
                size: transformed.output, frameCount: 1, isComplete: !decoded.image.metadata.isIncomplete,
                decodeSeconds: decoded.seconds,
                resizeSeconds: transformed.seconds, encodeSeconds: (clock.now - start).seconds)
        }
        let data = try coders.encode(
            image, as: format,
            options: settings.options(
                for: format, quality: options.quality, auto: options.autoQuality, animated: options.animated))
        let keepsFrames = options.animated && [.gif, .webp, .avif].contains(format)
        return Output(
            data: data, contentType: format.mimeType ?? "application/octet-stream", formatName: format.rawValue,
            size: transformed.output, frameCount: keepsFrames ? image.frameCount : 1,
            isComplete: !decoded.image.metadata.isIncomplete, decodeSeconds: decoded.seconds,
            resizeSeconds: transformed.seconds, encodeSeconds: (clock.now - start).seconds)
    }

    /// The source's upright size: its stored size, turned when the decoder applied a rotation.
    static func uprightSourceSize(_ image: Image) -> PixelSize? {
        guard let width = image.metadata.sourcePixelWidth, let height = image.metadata.sourcePixelHeight else {
            return nil
        }
        let turned = image.metadata.sourceOrientation.swapsDimensions && image.metadata.orientation == .up
        return turned ? PixelSize(width: height, height: width) : PixelSize(width: width, height: height)
    }

    /// Metadata as written to the thumbnail: orientation applied, no EXIF, no ICC profile (the pixels are sRGB).
    static func strippedMetadata(_ metadata: ImageMetadata) -> ImageMetadata {
        var stripped = ImageMetadata(orientation: .up, isTransformed: true)
        stripped.sourcePixelWidth = metadata.sourcePixelWidth
        stripped.sourcePixelHeight = metadata.sourcePixelHeight
        return stripped
    }
}

/// The limits on what a source may cost: pixels per frame (from the header, before any allocation), frames, and
/// an animation's pixels summed over its frames. Value type; thread-safe.
struct SourceLimits: Sendable, Equatable {
    /// Pixels per frame; also the cap on an animation's frames × canvas.
    var maxPixels: Int
    /// Frames an animated source may have.
    var maxFrames: Int

    /// Decode options carrying the limits and the conversion to sRGB.
    func decodeOptions(firstFrameOnly: Bool) -> ImageDecodeOptions {
        var options = ImageDecodeOptions(maxPixelCount: maxPixels, firstFrameOnly: firstFrameOnly)
        options.animationBudget = AnimationBudget(
            maxFrameCount: maxFrames, maxPixelCount: maxPixels, maxWorkPixelCount: maxPixels, onExceeded: .fail)
        // Colour: pixels described by an ICC profile (and CMYK) become sRGB at decode (ColorManagement's lcms2
        // converter, registered by the server), so the thumbnail needs no profile and browsers show it right.
        options.convertToSRGB = true
        return options
    }

    /// Refuses an animation whose frames × canvas exceed ``maxPixels`` or whose frames exceed ``maxFrames``.
    func checkAnimation(frames: Int, width: Int, height: Int) throws(ImageError) {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        try AnimationBudget(maxFrameCount: maxFrames, maxPixelCount: maxPixels).checkMaterialization(
            frameCount: frames, pixelsPerFrame: overflow ? .max : pixels)
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
