internal import CJXL
import Foundation
public import ImageCore

/// Decodes and encodes JPEG XL (codestream and container; stills and animations) with libjxl 0.7.
///
/// Register it with `CodersManager.shared.addCoder(JXLCoder.shared)`. Decoding asks libjxl for 8-bit samples whatever
/// the file stores (8 to 16-bit integers, half or single floats): gray8, grayAlpha8, rgb8 or rgba8, with alpha
/// premultiplied only when the file says so. The codestream orientation is applied by default, like EXIF orientation in
/// JPEG; with ``/ImageCore/ImageDecodeOptions/applyOrientation`` false the stored pixels come back and
/// ``/ImageCore/ImageMetadata/orientation`` says how to turn them. ``/ImageCore/ImageMetadata/iccProfile`` describes
/// the decoded pixels (nil when they are sRGB); a lossy (XYB) image whose colour would come out linear is decoded to
/// sRGB instead, as 8 bits cannot hold linear light well. The container's `Exif` box goes to
/// ``/ImageCore/ImageMetadata/exif``. Animations decode as the first frame plus an on-demand provider, unless
/// ``/ImageCore/ImageDecodeOptions/preloadAllFrames`` or ``/ImageCore/ImageDecodeOptions/firstFrameOnly`` is set (the
/// last frame is then decoded once to learn whether the bytes end inside it: such an animation is marked
/// ``/ImageCore/ImageMetadata/isIncomplete``; other cut files fail); frames are libjxl's coalesced (blended) frames,
/// durations come from the frame headers (10 ms or less plays at 100 ms, as browsers do), the loop count from the
/// animation header. Thumbnails decode at full size, then go through the shared area resampler.
///
/// Budgets: the coder reads the codestream's size header itself (``probe(_:)``) and refuses an image over
/// ``/ImageCore/ImageDecodeOptions/maxPixelCount`` before libjxl runs; it checks libjxl's basic info again before any
/// pixel buffer exists, and lists an animation's frames (headers only) to check the frame, whole-animation and work
/// budgets before any pixel is decoded.
///
/// Encoding: lossless (``/ImageCore/ImageEncodeOptions/lossless``) or lossy at a distance derived from
/// ``/ImageCore/ImageEncodeOptions/quality`` as `cjxl` derives it; ``/ImageCore/ImageEncodeOptions/effort`` picks
/// libjxl's effort (`.fast` 3, `.balanced` 7, `.best` 9); several frames make an animation.
///
/// Threading: thread-safe; each call owns its libjxl objects, and an animation's provider serializes its decoder. Calls
/// block: run them on the decode pool. Errors: ``/ImageCore/ImageError`` `badImageData` (with ``JXLLibError`` as the
/// cause), `imageTooLarge`, `encodeFailed`. libjxl 0.7 as Debian builds it prints the reason of a decode failure to
/// standard error; the error the coder throws only carries the status.
public final class JXLCoder: ProgressiveImageCoder, AnimatedImageCoder, ReportingImageCoder, Sendable {
    /// The shared instance to register (single-threaded decoding: the SDK decodes on several threads already).
    public static let shared = JXLCoder()

    /// Threads libjxl uses for one decode or encode (its thread runner when above 1).
    public let maxThreads: Int

    /// Creates a coder; `maxThreads` above 1 lets one large image use several cores, which helps a command-line
    /// tool and hurts a server that already decodes one image per core.
    public init(maxThreads: Int = 1) {
        self.maxThreads = max(1, maxThreads)
    }

    /// The libjxl version, e.g. `"0.7.0"`.
    public static var libraryVersion: String {
        let version = JxlDecoderVersion()
        return "\(version / 1_000_000).\(version / 1000 % 1000).\(version % 1000)"
    }

    // MARK: ImageCoder

    /// True for data starting with the codestream signature (`FF 0A`) or the container's signature box.
    public func canDecode(_ data: Data) -> Bool { data.withUnsafeBytes { JXLHeader.hasSignature($0) } }

    /// True for ``/ImageCore/ImageFormat/jxl``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .jxl }

    /// Reads the stored size from the codestream's size header (inside the container's first codestream box when
    /// there is one); nil when it has not arrived. The frame count is 1 for a still image and nil for an animation
    /// or when the image header has not arrived (JPEG XL only tells an animation's count by walking every frame).
    public func probe(_ data: Data) -> ImageProperties? {
        guard let header = data.withUnsafeBytes({ JXLHeader.read($0) }) else { return nil }
        return ImageProperties(
            format: .jxl, width: header.width, height: header.height,
            frameCount: header.isAnimated == false ? 1 : nil)
    }

    /// Decodes `data` per `options`: a still, or the first frame plus a provider, every frame, or only the first.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let reader = try open(data, options: options)
        guard reader.isAnimated, !options.firstFrameOnly else { return try still(reader) }
        let index = try JXLAnimationIndex.read(data, maxFrameCount: options.maxFrameCount)
        let budget = options.animationBudget
        if index.exceededFrameLimit {
            // Over the frame budget: an error, or the first frame as a still with the `firstFrameOnly` policy.
            if budget.onExceeded != .firstFrameOnly { try budget.checkFrameCount(index.durations.count + 1) }
            return try still(reader)
        }
        let count = index.durations.count
        guard count > 1 else { return try still(reader) }
        let canvas = reader.storedSize.width * reader.storedSize.height
        if options.preloadAllFrames {
            do throws(ImageError) {
                try budget.checkMaterialization(
                    frameCount: count, pixelsPerFrame: reader.target.width * reader.target.height)
                var work = 0
                try budget.spendWork(count.multipliedReportingOverflow(by: canvas).partialValue, from: &work)
            } catch {
                guard budget.onExceeded == .firstFrameOnly else { throw error }
                return try still(reader)
            }
            var frames: [ImageFrame] = []
            frames.reserveCapacity(count)
            for i in 0..<count { frames.append(try reader.frame(at: i, duration: index.durations[i])) }
            return Image(
                frames: frames, loopCount: index.loopCount, format: .jxl, metadata: reader.metadata(),
                animationBudget: budget)
        }
        let first = try reader.frame(at: 0, duration: index.durations[0])
        var metadata = reader.metadata()
        metadata.isIncomplete = JXLLastFrameCheck.endsInLastFrame(
            data, header: reader.header, count: count, options: options, maxThreads: maxThreads)
        let provider = JXLAnimatedProvider(reader: reader, durations: index.durations, loopCount: index.loopCount)
        return Image(
            frames: [first], frameCount: count, loopCount: index.loopCount, format: .jxl, metadata: metadata,
            animatedProvider: provider, animationBudget: budget)
    }

    /// Encodes `image` as JPEG XL: lossless, or lossy at `quality`; an animation when it has several frames and
    /// `firstFrameOnly` is off. See ``JXLCoder`` for the settings.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `noCoder` for another format, `encodeFailed` (libjxl's status as the cause).
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .jxl else {
            throw ImageError(.noCoder, stage: .encode, message: "JXLCoder cannot encode \(format)")
        }
        return try encodeReporting(image, as: format, options: options).data
    }

    /// ``encode(_:as:options:)``, reporting the quality used and, with a
    /// ``/ImageCore/ImageEncodeOptions/perceptualTarget``, a report with metric `jxl-distance`, one encode and no
    /// measured distance (libjxl encodes to the distance).
    ///
    /// - Throws: as ``encode(_:as:options:)``.
    public func encodeReporting(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        guard format == .jxl else {
            throw ImageError(.noCoder, stage: .encode, message: "JXLCoder cannot encode \(format)")
        }
        return try JXLEncoder.encode(image, options: options, maxThreads: maxThreads)
    }

    // MARK: AnimatedImageCoder

    /// Opens `data` as an animation (a still is a one-frame animation): reads the headers and lists the frames;
    /// no pixel is decoded.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData`, or `imageTooLarge` (a frame count over the budget is
    ///   refused, never truncated).
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        var onDemand = options
        onDemand.preloadAllFrames = false
        let reader = try open(data, options: onDemand)
        guard reader.isAnimated else { return JXLAnimatedProvider(reader: reader, durations: [0], loopCount: 0) }
        let index = try JXLAnimationIndex.read(data, maxFrameCount: options.maxFrameCount)
        if index.exceededFrameLimit { try options.animationBudget.checkFrameCount(index.durations.count + 1) }
        return JXLAnimatedProvider(reader: reader, durations: index.durations, loopCount: index.loopCount)
    }

    // MARK: ProgressiveImageCoder

    /// True when `data` starts like a JPEG XL file.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// A decoder that shows libjxl's progressive steps (the 1:8 DC image, then each pass) of the first frame as bytes
    /// arrive; the final image is exactly a full decode. ImageCore's ``/ImageCore/IncrementalDecoder`` with JPEG XL's
    /// step.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: JXLIncrementalStep(coder: self, options: options))
    }

    // MARK: Internals

    /// The size header's budget check, then libjxl up to its basic info (checked again).
    func open(_ data: Data, options: ImageDecodeOptions) throws(ImageError) -> JXLFrameReader {
        guard let header = data.withUnsafeBytes({ JXLHeader.read($0) }) else {
            let signed = data.withUnsafeBytes { JXLHeader.hasSignature($0) }
            throw JXLStatus.badData(signed ? "no size header (truncated or no codestream)" : "no JPEG XL signature")
        }
        try options.checkPixelBudget(width: header.width, height: header.height)
        return try JXLFrameReader(data: data, header: header, options: options, maxThreads: maxThreads)
    }

    /// The first frame as a still image.
    private func still(_ reader: JXLFrameReader) throws(ImageError) -> Image {
        let frame = try reader.frame(at: 0, duration: 0)
        return Image(frames: [frame], format: .jxl, metadata: reader.metadata())
    }
}
