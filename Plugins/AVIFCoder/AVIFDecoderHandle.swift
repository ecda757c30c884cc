internal import CAVIF
import Foundation
import ImageCore

/// An immutable heap copy of an encoded AVIF file at a stable address.
///
/// libavif reads from the memory it is given for the decoder's whole life (`avifDecoderSetIOMemory` does not
/// copy), which a `Data` cannot promise outside `withUnsafeBytes`; the decoder handle keeps these bytes alive.
final class AVIFBytes: Sendable {
    // Written once in init, read-only after, freed in deinit: safe to share across threads.
    private nonisolated(unsafe) let pointer: UnsafeMutableRawBufferPointer
    /// Number of bytes (the allocation is at least 1 byte).
    let count: Int

    init(_ data: Data) {
        pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        _ = data.copyBytes(to: pointer)
        count = data.count
    }

    deinit { pointer.deallocate() }

    /// Start of the bytes, valid while `self` lives.
    var start: UnsafePointer<UInt8> { UnsafePointer(pointer.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
}

/// The limits one decode runs under, from the SDK's budget: libavif's own limits are set from them and the coder
/// checks them from the container before libavif decodes anything.
struct AVIFDecodeLimits: Sendable {
    /// Pixels of one frame (``ImageDecodeOptions/maxPixelCount``).
    var maxPixelCount: Int
    /// Frames of one image sequence. libavif's default image-count limit (12 hours at 60 fps): ImageDecodeOptions
    /// has no frame budget yet.
    var maxFrameCount: Int
    /// Pixels of all frames decoded up front (``ImageDecodeOptions/preloadAllFrames``): frames × canvas must fit
    /// the same pixel budget as one frame, because they are all held at once.
    var maxPreloadedPixelCount: Int

    init(_ options: ImageDecodeOptions) {
        maxPixelCount = options.maxPixelCount
        maxFrameCount = 12 * 3600 * 60
        maxPreloadedPixelCount = options.maxPixelCount
    }

    /// Throws `imageTooLarge` when a frame of `size` or `frames` frames exceed the budget (`preload`: all held).
    func check(_ size: PixelSize, frames: Int, preload: Bool, options: ImageDecodeOptions) throws(ImageError) {
        try options.checkPixelBudget(width: size.width, height: size.height)
        if frames > maxFrameCount {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "image sequence declares \(frames) frames; the budget is \(maxFrameCount)")
        }
        if preload && frames > 1 {
            let (total, overflow) = (size.width * size.height).multipliedReportingOverflow(by: frames)
            if overflow || total > maxPreloadedPixelCount {
                throw ImageError(
                    .imageTooLarge, stage: .decode,
                    message:
                        "\(frames) frames of \(size) preloaded exceed the budget of \(maxPreloadedPixelCount) pixels")
            }
        }
    }
}

/// Owns an `avifDecoder` reading from ``AVIFBytes``; destroys it in `deinit`.
///
/// Not thread-safe: one decode call, or under the lock of ``AVIFAnimatedProvider``.
final class AVIFDecoderHandle {
    let bytes: AVIFBytes
    private let decoder: UnsafeMutablePointer<avifDecoder>

    /// Creates a decoder over `bytes` with libavif's limits set from `limits` and parses the container (no AV1
    /// decoding yet). Throws `badImageData`, or `imageTooLarge` when libavif's limits refuse the file.
    init(bytes: AVIFBytes, limits: AVIFDecodeLimits, maxThreads: Int) throws(ImageError) {
        guard let decoder = avifDecoderCreate() else {
            throw AVIFStatus.missing("avifDecoderCreate failed", stage: .decode)
        }
        self.bytes = bytes
        self.decoder = decoder
        decoder.pointee.maxThreads = Int32(clamping: max(1, maxThreads))
        decoder.pointee.ignoreXMP = AVIF_TRUE
        decoder.pointee.imageSizeLimit = UInt32(clamping: max(1, limits.maxPixelCount))
        decoder.pointee.imageDimensionLimit = UInt32(clamping: max(1, min(limits.maxPixelCount, 32768)))
        decoder.pointee.imageCountLimit = UInt32(clamping: max(1, limits.maxFrameCount))
        try check(avifDecoderSetIOMemory(decoder, bytes.start, bytes.count), "cannot read AVIF")
        try check(avifDecoderParse(decoder), "invalid AVIF container")
    }

    deinit { avifDecoderDestroy(decoder) }

    /// The decoder's image: after parsing, the container's facts; after a frame decode, its planes.
    var image: UnsafeMutablePointer<avifImage> { decoder.pointee.image }

    /// Stored size of the image or sequence (before `clap` / `irot` / `imir`).
    var size: PixelSize { PixelSize(width: Int(image.pointee.width), height: Int(image.pointee.height)) }

    /// Frames in the sequence (1 for stills).
    var frameCount: Int { Int(decoder.pointee.imageCount) }

    /// True when the file has an alpha plane.
    var hasAlpha: Bool { decoder.pointee.alphaPresent != AVIF_FALSE }

    /// Display time of frame `index` in seconds (0 when the file gives none).
    func duration(at index: Int) -> Double {
        var timing = avifImageTiming()
        guard avifDecoderNthImageTiming(decoder, UInt32(clamping: index), &timing) == AVIF_RESULT_OK else { return 0 }
        return timing.duration.isFinite && timing.duration > 0 ? timing.duration : 0
    }

    /// Decodes frame `index` into ``image`` (libavif seeks from the nearest keyframe when needed).
    func decodeFrame(_ index: Int) throws(ImageError) {
        guard index >= 0 && index < frameCount else {
            throw ImageError(.badImageData, stage: .decode, message: "frame \(index) out of range 0..<\(frameCount)")
        }
        let result =
            index == Int(decoder.pointee.imageIndex) + 1
            ? avifDecoderNextImage(decoder) : avifDecoderNthImage(decoder, UInt32(index))
        try check(result, "cannot decode AVIF frame \(index)")
    }

    private func check(_ result: avifResult, _ context: String) throws(ImageError) {
        guard result == AVIF_RESULT_OK else {
            throw AVIFStatus.decode(result, diagnostics: decoder.pointee.diag.message, context)
        }
    }
}
