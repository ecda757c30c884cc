internal import CAVIF
import Foundation
import ImageCore

/// Decodes and encodes AVIF (AV1 in HEIF: stills, grids, alpha, 8/10/12-bit, monochrome, image sequences) with
/// libavif.
///
/// Register it with `CodersManager.shared.addCoder(AVIFCoder.shared)`. Decoding converts to 8-bit RGB(A), or
/// gray for monochrome files, with alpha premultiplied only when the file says its colour is premultiplied.
/// `clap`, `irot` and `imir` are applied by default, like EXIF orientation in JPEG; with
/// ``/ImageCore/ImageDecodeOptions/applyOrientation`` false the stored pixels come back and
/// ``/ImageCore/ImageMetadata/orientation`` tells the rotation and mirror. ICC and EXIF land in
/// ``/ImageCore/ImageMetadata``. Image sequences (`avis`) decode as animations: the first frame plus an on-demand
/// provider, unless ``/ImageCore/ImageDecodeOptions/preloadAllFrames`` or
/// ``/ImageCore/ImageDecodeOptions/firstFrameOnly`` is set; durations come from the track, the loop count from its edit
/// list (none: forever). Thumbnails: AV1 has no reduced decode, so the YUV planes are decoded at full size, but their
/// conversion to RGB runs a strip of rows at a time into the shared area reducer; full-size RGB never exists (the
/// pixels are exactly those of a full conversion, area-averaged).
///
/// Budgets: before libavif runs, the coder reads the container itself (``probe(_:)``: the primary item's
/// `ispe`, a sequence's frame size and sample count) and refuses, with `imageTooLarge`, a frame over
/// ``/ImageCore/ImageDecodeOptions/maxPixelCount``, a sequence over the frame budget, or preloaded frames whose total
/// exceeds the pixel budget; libavif's `imageSizeLimit`, `imageDimensionLimit` and `imageCountLimit` are set
/// from the same budget and checked again after parsing, before any AV1 decoding.
///
/// Encoding uses libavif's automatic AV1 encoder choice (libaom in Debian's build); ``canEncode(to:)`` is false
/// when the linked libavif has no encoder.
///
/// Threading: thread-safe; each call owns its libavif objects, and an animation's provider serializes its
/// decoder. Calls block: run them on the decode pool. Errors: ``/ImageCore/ImageError`` `badImageData` (with
/// ``AVIFLibError`` as the cause), `imageTooLarge`, `encodeFailed`, `noCoder` (no AV1 codec in libavif).
public final class AVIFCoder: ProgressiveImageCoder, AnimatedImageCoder, ReportingImageCoder, Sendable {
    /// The shared instance to register (single-threaded AV1 decoding: the SDK decodes on several threads).
    public static let shared = AVIFCoder()

    /// Threads libavif gives the AV1 decoder and encoder for one image.
    public let maxThreads: Int

    /// Creates a coder; `maxThreads` above 1 lets one large decode or encode use several cores, which helps a
    /// command-line tool and hurts a server that already decodes one image per core.
    public init(maxThreads: Int = 1) {
        self.maxThreads = max(1, maxThreads)
    }

    /// The AV1 codecs the linked libavif offers, e.g. `"dav1d [dec]:1.0.0, aom [enc/dec]:v3.6.0"`.
    public static var codecVersions: String {
        var buffer = [CChar](repeating: 0, count: 256)
        avifCodecVersions(&buffer)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The libavif version, e.g. `"0.11.1"`.
    public static var libraryVersion: String { String(cString: avifVersion()) }

    /// True when libavif was built with an AV1 encoder.
    public static let hasEncoder: Bool =
        avifCodecName(AVIF_CODEC_CHOICE_AUTO, AVIF_CODEC_FLAG_CAN_ENCODE.rawValue) != nil

    /// True when libavif was built with an AV1 decoder.
    public static let hasDecoder: Bool =
        avifCodecName(AVIF_CODEC_CHOICE_AUTO, AVIF_CODEC_FLAG_CAN_DECODE.rawValue) != nil

    // MARK: ImageCoder

    /// True for ISO-BMFF files whose `ftyp` names the `avif` or `avis` brand.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .avif }

    /// True for ``/ImageCore/ImageFormat/avif`` when libavif has an AV1 encoder.
    public func canEncode(to format: ImageFormat) -> Bool { format == .avif && Self.hasEncoder }

    /// Reads the stored size (the primary item's `ispe`, or a sequence track's size) and the frame count from the
    /// container boxes; nil when they are not readable yet. Works on a prefix of the file.
    public func probe(_ data: Data) -> ImageProperties? {
        guard canDecode(data), let container = AVIFContainer.read(data), let size = container.frameSize else {
            return nil
        }
        return ImageProperties(
            format: .avif, width: size.width, height: size.height, frameCount: container.frameCount)
    }

    /// Decodes `data` per `options`: a still, or the first frame plus a provider, every frame, or only the first.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData`, `imageTooLarge` or `noCoder`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let reader = try open(data, options: options)
        let count = reader.frameCount
        if count == 1 {
            let frame = try reader.frame(at: 0, duration: 0)
            return Image(frames: [frame], format: .avif, metadata: reader.metadata())
        }
        let durations = (0..<count).map { Self.displayDuration(reader.handle.duration(at: $0)) }
        let first = try reader.frame(at: 0, duration: durations[0])
        let metadata = reader.metadata()
        let loopCount = AVIFContainer.read(data)?.loopCount ?? 0
        if options.preloadAllFrames {
            var frames = [first]
            frames.reserveCapacity(count)
            for index in 1..<count { frames.append(try reader.frame(at: index, duration: durations[index])) }
            return Image(frames: frames, loopCount: loopCount, format: .avif, metadata: metadata)
        }
        let provider = AVIFAnimatedProvider(reader: reader, durations: durations, loopCount: loopCount)
        return Image(
            frames: [first], frameCount: count, loopCount: loopCount, format: .avif, metadata: metadata,
            animatedProvider: provider)
    }

    // MARK: AnimatedImageCoder

    /// Opens `data` as an animation (a still is a one-frame animation); parses the container, decodes nothing.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData`, `imageTooLarge` or `noCoder`.
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        var onDemand = options
        onDemand.preloadAllFrames = false
        let reader = try open(data, options: onDemand)
        let durations = (0..<reader.frameCount).map { Self.displayDuration(reader.handle.duration(at: $0)) }
        let loopCount = AVIFContainer.read(data)?.loopCount ?? 0
        return AVIFAnimatedProvider(reader: reader, durations: durations, loopCount: loopCount)
    }

    // MARK: ProgressiveImageCoder

    /// True when `data` starts like an AVIF file.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// A decoder that shows the rows libavif can decode from the bytes so far (tiles of a grid image as they
    /// arrive); a single-tile image, the common case, shows nothing until complete. ImageCore's
    /// ``/ImageCore/IncrementalDecoder`` with AVIF's step.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: AVIFIncrementalStep(coder: self, options: options))
    }

    // MARK: Encoding

    /// Encodes `image` as AVIF: lossy at `quality`, or lossless (4:4:4, identity matrix); alpha when the pixels
    /// have any; an image sequence when the image has several frames and `firstFrameOnly` is off. `effort`
    /// picks libavif's speed (`.fast` 10, `.balanced` 6, `.best` 3). `maxPixelSize` downsizes first;
    /// `maxFileSize` lowers the quality step by step and returns the smallest result when nothing fits.
    /// Pixels kept in a stored orientation are written with the matching `irot` / `imir`.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `encodeFailed` (no AV1 encoder, or libavif's status as the cause).
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .avif else {
            throw ImageError(.noCoder, stage: .encode, message: "AVIFCoder cannot encode \(format)")
        }
        return try AVIFEncoder.encode(image, options: options, maxThreads: maxThreads).data
    }

    /// ``encode(_:as:options:)``, reporting the quality used (chosen by a
    /// ``/ImageCore/ImageEncodeOptions/perceptualTarget`` on the first frame — levels are 63 minus the AV1 quantizer —
    /// or lowered by `maxFileSize`) and the perceptual search's report.
    ///
    /// - Throws: as ``encode(_:as:options:)``; `noPerceptualMetric` for a target without a registered metric.
    public func encodeReporting(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        guard format == .avif else {
            throw ImageError(.noCoder, stage: .encode, message: "AVIFCoder cannot encode \(format)")
        }
        return try AVIFEncoder.encode(image, options: options, maxThreads: maxThreads)
    }

    // MARK: Internals

    /// Budget check from the container, then libavif's parse (with its limits) and the same check on what it
    /// found. No pixel memory is allocated before both checks pass.
    ///
    /// A sequence over the whole-animation budget fails with `imageTooLarge`, or — with
    /// ``AnimationBudget/Policy/firstFrameOnly`` — opens as its first frame (a still image).
    func open(_ data: Data, options: ImageDecodeOptions) throws(ImageError) -> AVIFFrameReader {
        guard canDecode(data) else {
            throw ImageError(.badImageData, stage: .decode, message: "not an AVIF file (no avif/avis ftyp brand)")
        }
        do throws(ImageError) {
            return try open(data, options: options, limits: AVIFDecodeLimits(options))
        } catch {
            guard error.code == .imageTooLarge, options.animationBudget.onExceeded == .firstFrameOnly,
                !options.firstFrameOnly
            else { throw error }
            var firstFrame = options
            firstFrame.firstFrameOnly = true
            var limits = AVIFDecodeLimits(firstFrame)
            limits.maxFrameCount = AVIFDecodeLimits.libavifFrameCountLimit
            return try open(data, options: firstFrame, limits: limits)
        }
    }

    private func open(
        _ data: Data, options: ImageDecodeOptions, limits: AVIFDecodeLimits
    ) throws(ImageError) -> AVIFFrameReader {
        let preload = options.preloadAllFrames && !options.firstFrameOnly
        if let container = AVIFContainer.read(data), let size = container.frameSize, size.width > 0,
            size.height > 0
        {
            try limits.check(size, frames: container.frameCount, preload: preload, options: options)
        }
        let handle = try AVIFDecoderHandle(bytes: AVIFBytes(data), limits: limits, maxThreads: maxThreads)
        try limits.check(
            handle.size, frames: options.firstFrameOnly ? 1 : handle.frameCount, preload: preload, options: options)
        if handle.frameCount > limits.maxFrameCount {
            throw ImageError(.imageTooLarge, stage: .decode, message: "\(handle.frameCount) frames over the budget")
        }
        return AVIFFrameReader(handle: handle, options: options)
    }

    /// A frame without a duration plays for 100 ms (the durations of a track are exact, so no other clamp).
    static func displayDuration(_ seconds: Double) -> Double { seconds > 0 ? seconds : 0.1 }
}
