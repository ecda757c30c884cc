import Foundation
public import ImageCore

/// Decodes and encodes PNG and APNG with the system libpng (1.6).
///
/// Register it with `CodersManager.shared.addCoder(PNGCoder.shared)`.
///
/// Decoding uses a fast reader for the common PNG (8-bit gray, gray + alpha, RGB or RGBA without tRNS, gamma
/// libpng leaves alone: libdeflate's inflate and SIMD row filters, exactly libpng's pixels) and libpng's simplified
/// API, which returns status codes (no longjmp), for everything else. Every colour type and bit depth is
/// supported: output is RGBA8 with straight alpha when the image has alpha (alpha channel or tRNS),
/// RGB8 for colour and palette images, gray8 for gray ones; 16-bit samples are reduced to 8 bits; gAMA, sRGB and
/// cHRM are resolved by libpng to sRGB; the iCCP profile and eXIf bytes go to ``/ImageCore/ImageMetadata``. PNG
/// orientation (eXIf) is reported in `metadata.exif` but not applied.
///
/// APNG: Debian's libpng 1.6.39 has no APNG support, so the coder reads `acTL`, `fcTL` and `fdAT` itself and
/// feeds libpng one frame at a time (each frame as a still PNG stream); it composites every dispose and blend
/// op at the frame offsets onto an RGBA8 canvas. An animated decode returns the first frame plus an on-demand
/// provider, unless ``/ImageCore/ImageDecodeOptions/preloadAllFrames`` or
/// ``/ImageCore/ImageDecodeOptions/firstFrameOnly`` is set; the default image is a frame only when its `fcTL` precedes
/// the `IDAT`. Loop count from `num_plays`, delays from `delay_num / delay_den` (`delay_den` 0 means 100; 10 ms or less
/// plays at 100 ms, as browsers do). Frame count, whole-animation pixels and decoding work are checked from `acTL` /
/// `fcTL` before any pixel is decoded. A file whose `acTL` must be ignored is a still PNG; a damaged animation
/// (sequence errors, frames outside the canvas, `fdAT` before `fcTL`, fewer frames than `num_frames`) fails with
/// `badImageData`: see the DocC article "APNG" for the rules and why.
///
/// The pixel budget is checked against the IHDR size read by this coder before libpng allocates anything.
/// Thumbnails and scale-down shrink while decoding: rows are read a strip at a time and area-averaged into the
/// thumbnail as they come, so a 12 MP PNG never sits in memory at full size (the fast reader holds an image's
/// inflated data instead when it is at most 16 MiB; interlaced files the fast reader does not take, whose rows are
/// only complete after the last pass, decode in full and are then area-averaged). Either way the pixels are
/// exactly the full decode's, area-averaged.
///
/// Threading: stateless and `Sendable`; decode and encode may run concurrently from any threads and block the
/// calling thread, so call them from a decode pool, not the cooperative pool.
/// Errors: ``/ImageCore/ImageError`` with `badImageData`, `imageTooLarge` (decode) or `encodeFailed`; the libpng
/// message is the underlying ``PNGLibraryError``.
public final class PNGCoder: ProgressiveImageCoder, AnimatedImageCoder, Sendable {
    /// The shared instance to register with ``/ImageCore/CodersManager``.
    public static let shared = PNGCoder()

    /// Creates a coder; it holds no state, so ``shared`` is usually enough.
    public init() {}

    /// True when `data` starts with the 8-byte PNG signature.
    public func canDecode(_ data: Data) -> Bool {
        data.withUnsafeBytes { PNGChunks.hasSignature($0) }
    }

    /// Decodes `data`: a still PNG, or an APNG's first frame plus a provider, every frame, or only the first.
    ///
    /// An image decoded from bytes that end before the IEND chunk is marked ``/ImageCore/ImageMetadata/isIncomplete``
    /// (libpng stops reading after the last image data, so a file cut in the chunks after it still decodes).
    /// - Throws: ``/ImageCore/ImageError`` `imageTooLarge` when IHDR exceeds `options.maxPixelCount` or an animation
    ///   exceeds
    ///   its ``/ImageCore/AnimationBudget``, `badImageData` otherwise.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let image = try PNGDecoder.decode(data, options: options)
        guard data.withUnsafeBytes({ PNGChunks.endsBeforeIEND($0) }) else { return image }
        var metadata = image.metadata
        metadata.isIncomplete = true
        return image.with(metadata: metadata)
    }

    /// True for ``/ImageCore/ImageFormat/png``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .png }

    /// PNG and APNG keep every 8-bit layout exactly.
    public func encodesExactly(to format: ImageFormat) -> Bool { format == .png }

    /// Encodes `image` as PNG, or as APNG when it has several frames and `firstFrameOnly` is off; see
    /// ``/ImageCore/ImageEncodeOptions/effort`` for the speed trade-off.
    ///
    /// Compression is libdeflate's: `.fast` is level 1 with the Paeth filter on every row (use it wherever the SDK
    /// encodes on its own), `.balanced` the per-row filter heuristic with level 1 for photographs, 6 for
    /// photographs with large smooth areas and 9 for drawings and flat colour (picked from the filtered data),
    /// `.best` level 12; `progressive` writes Adam7
    /// (through libpng, as images with an ICC profile are). An APNG holds every frame whole
    /// (dispose `none`, blend `source`), the first frame as the default image, the durations in milliseconds and
    /// the loop count; frames beyond the image's ``/ImageCore/AnimationBudget`` are refused before any is encoded (or
    /// dropped to the first with the `firstFrameOnly` policy).
    /// - Throws: ``/ImageCore/ImageError`` `noCoder` for another format, `encodeFailed` when libpng fails.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .png else {
            throw ImageError(.noCoder, stage: .encode, message: "PNGCoder cannot encode \(format)")
        }
        if image.frameCount > 1 && !options.firstFrameOnly {
            return try APNGEncoder.encode(image, options: options)
        }
        return try PNGEncoder.encode(image, options: options)
    }

    /// Opens `data` as an animation: an APNG's frame index (no pixel is decoded), or a still PNG as one frame.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` or `imageTooLarge` (see ``decode(_:options:)``).
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        let chunks = try PNGDecoder.header(of: data, scanAll: true)
        try options.checkPixelBudget(width: chunks.width, height: chunks.height)
        let target = options.targetSize(forSourceWidth: chunks.width, height: chunks.height)
        guard let control = data.withUnsafeBytes({ APNGStructure.animationControl($0) }).control else {
            return PNGStillProvider(data: data, options: options, canvasSize: target)
        }
        // The caller asked for the animation itself: a frame count over the budget is refused, never truncated.
        try options.animationBudget.checkFrameCount(control.numFrames)
        let structure = try data.withUnsafeBytes {
            try APNGStructure.scan($0, control: control, stopAfterFirstFrame: false)
        }
        return APNGAnimatedProvider(
            data: data, structure: structure, header: chunks, target: target, budget: options.animationBudget,
            compositor: nil)
    }

    /// Reads the size from IHDR and the frame count from `acTL` without libpng; nil when the signature or IHDR is
    /// missing.
    ///
    /// The frame count is `acTL`'s `num_frames` for an APNG (what a successful decode returns), 1 for a still PNG,
    /// nil while a prefix ends before the first `IDAT` (an `acTL` may still come).
    public func probe(_ data: Data) -> ImageProperties? {
        guard let chunks = PNGChunks.read(data, scanAll: false) else { return nil }
        let animation = data.withUnsafeBytes { APNGStructure.animationControl($0) }
        let frames: Int? = animation.decided ? animation.control?.numFrames ?? 1 : nil
        return ImageProperties(format: .png, width: chunks.width, height: chunks.height, frameCount: frames)
    }

    /// True once the prefix shows the PNG signature.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// Creates a decoder fed with a growing prefix: ImageCore's ``/ImageCore/IncrementalDecoder`` with PNG's step
    /// (libpng's progressive reader).
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: PNGIncrementalStep(coder: self, options: options))
    }
}
