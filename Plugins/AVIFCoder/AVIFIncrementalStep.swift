internal import CAVIF
import Foundation
import ImageCore

/// The bytes received so far, offered to libavif through a custom `avifIO` that answers "waiting on I/O" for
/// ranges that have not arrived.
///
/// The buffer may be reallocated between decoder calls: the `avifIO` is not persistent, so libavif copies what
/// it keeps and holds a returned region only until its next read. Not thread-safe (the incremental decoder's
/// thread).
final class AVIFStreamingSource {
    private var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private(set) var available = 0

    deinit { storage.deallocate() }

    /// Replaces the bytes with a longer prefix of the same file.
    func update(_ data: Data) {
        // Copying into an unallocated (nil) buffer traps: no bytes, nothing to copy (found by fuzzing).
        guard !data.isEmpty else {
            available = 0
            return
        }
        if data.count > storage.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(
                byteCount: max(data.count, storage.count * 2), alignment: 16)
            storage.deallocate()
            storage = grown
        }
        _ = data.copyBytes(to: storage)
        available = data.count
    }

    /// libavif's read contract: a region inside the bytes, a 0-byte region exactly at their end... except that
    /// ranges past what arrived are "waiting", since the file is longer than the prefix.
    func read(offset: UInt64, size: Int, into out: UnsafeMutablePointer<avifROData>) -> avifResult {
        guard offset <= UInt64(available) else { return AVIF_RESULT_WAITING_ON_IO }
        let start = Int(offset)
        guard size <= available - start else { return AVIF_RESULT_WAITING_ON_IO }
        out.pointee.data = UnsafePointer(storage.baseAddress?.advanced(by: start).assumingMemoryBound(to: UInt8.self))
        out.pointee.size = size
        return AVIF_RESULT_OK
    }
}

/// Owns an `avifDecoder` in incremental mode and the `avifIO` that feeds it from an ``AVIFStreamingSource``;
/// destroys the decoder, then the I/O object, in `deinit`. Not thread-safe.
final class AVIFStreamingDecoder {
    let decoder: UnsafeMutablePointer<avifDecoder>
    private let io: UnsafeMutablePointer<avifIO>
    private let source: AVIFStreamingSource

    /// The size hint libavif checks extents against while the total size is unknown.
    static let sizeHint: UInt64 = 1 << 30

    init(source: AVIFStreamingSource, limits: AVIFDecodeLimits) throws(ImageError) {
        guard let decoder = avifDecoderCreate() else {
            throw AVIFStatus.missing("avifDecoderCreate failed", stage: .decode)
        }
        self.decoder = decoder
        self.source = source
        io = UnsafeMutablePointer<avifIO>.allocate(capacity: 1)
        io.initialize(to: avifIO())
        io.pointee.destroy = nil  // this class frees it, after the decoder
        io.pointee.read = { io, _, offset, size, out in
            guard let io, let out, let context = io.pointee.data else { return AVIF_RESULT_IO_ERROR }
            return Unmanaged<AVIFStreamingSource>.fromOpaque(context).takeUnretainedValue()
                .read(offset: offset, size: size, into: out)
        }
        io.pointee.write = nil
        io.pointee.sizeHint = Self.sizeHint
        io.pointee.persistent = AVIF_FALSE
        io.pointee.data = Unmanaged.passUnretained(source).toOpaque()
        decoder.pointee.maxThreads = 1
        decoder.pointee.allowIncremental = AVIF_TRUE
        decoder.pointee.ignoreXMP = AVIF_TRUE
        decoder.pointee.imageSizeLimit = UInt32(clamping: max(1, limits.maxPixelCount))
        decoder.pointee.imageDimensionLimit = UInt32(clamping: max(1, min(limits.maxPixelCount, 32768)))
        decoder.pointee.imageCountLimit = UInt32(clamping: max(1, limits.maxFrameCount))
        avifDecoderSetIO(decoder, io)
    }

    deinit {
        avifDecoderDestroy(decoder)
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

/// AVIF's step of the incremental decoder, on libavif's `allowIncremental`: previews grow as the tiles of a grid
/// image arrive; missing rows are transparent (or black without alpha).
///
/// AV1 has no progressive rows inside one tile, so a single-tile still (the common AVIF) and image sequences
/// yield no preview: nothing until the bytes are complete. The container's `ispe` gives the size the scaffold
/// checks against the budget; the frame count is checked against the animation budget at every preview. The
/// final image is exactly ``AVIFCoder/decode(_:options:)`` of the same bytes.
final class AVIFIncrementalStep: IncrementalDecoderStep {
    private let coder: AVIFCoder
    private let options: ImageDecodeOptions
    private let limits: AVIFDecodeLimits
    private let source = AVIFStreamingSource()
    private var streaming: AVIFStreamingDecoder?
    private var parsed = false
    private var rows = 0

    init(coder: AVIFCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
        self.limits = AVIFDecodeLimits(options)
    }

    func header(in data: Data) throws -> PixelSize? { AVIFContainer.read(data)?.frameSize }

    func preview(of data: Data) throws -> IncrementalPreview {
        if let container = AVIFContainer.read(data), let size = container.frameSize {
            try limits.check(size, frames: container.frameCount, preload: false, options: options)
            if container.frameCount > 1 { return .finished(nil) }
        }
        source.update(data)
        let streaming = try self.streaming ?? AVIFStreamingDecoder(source: source, limits: limits)
        self.streaming = streaming
        let decoder = streaming.decoder
        if !parsed {
            let result = avifDecoderParse(decoder)
            if result == AVIF_RESULT_WAITING_ON_IO { return .nothingNew }
            guard result == AVIF_RESULT_OK else {
                throw AVIFStatus.decode(result, diagnostics: decoder.pointee.diag.message, "invalid AVIF container")
            }
            parsed = true
            let size = PixelSize(
                width: Int(decoder.pointee.image.pointee.width),
                height: Int(decoder.pointee.image.pointee.height))
            try limits.check(size, frames: Int(decoder.pointee.imageCount), preload: false, options: options)
            if decoder.pointee.imageCount != 1 { return .finished(nil) }
        }
        let result = avifDecoderNextImage(decoder)
        guard result == AVIF_RESULT_OK || result == AVIF_RESULT_WAITING_ON_IO else {
            throw AVIFStatus.decode(result, diagnostics: decoder.pointee.diag.message, "cannot decode AVIF")
        }
        let decoded = Int(avifDecoderDecodedRowCount(decoder))
        guard decoded > 0, decoded != rows, let image = try makePartial(decoder, rows: decoded) else {
            return .nothingNew
        }
        rows = decoded
        // Every row decoded: nothing more to show before the final decode.
        return decoded >= Int(decoder.pointee.image.pointee.height) ? .finished(image) : .image(image)
    }

    func decodeFinal(_ data: Data) throws -> Image { try coder.decode(data, options: options) }

    /// The top `rows` rows converted to RGB(A) in a full-size buffer, then transformed and resampled as a full
    /// decode would.
    private func makePartial(_ decoder: UnsafeMutablePointer<avifDecoder>, rows: Int) throws(ImageError) -> Image? {
        let full = decoder.pointee.image!
        let width = Int(full.pointee.width)
        let height = Int(full.pointee.height)
        // A view of the decoded rows; subsampled chroma needs an even row count unless it is the whole image.
        var visible = min(rows, height)
        if visible < height && full.pointee.yuvFormat == AVIF_PIXEL_FORMAT_YUV420 { visible &= ~1 }
        guard visible > 0, let view = avifImageCreateEmpty() else { return nil }
        defer { avifImageDestroy(view) }
        var rect = avifCropRect(x: 0, y: 0, width: UInt32(width), height: UInt32(visible))
        guard avifImageSetViewRect(view, full, &rect) == AVIF_RESULT_OK else { return nil }
        let top = try AVIFPixels.convert(view, hasAlpha: decoder.pointee.alphaPresent != AVIF_FALSE)
        // The rows decoded so far on top, the rest zero (transparent, or black).
        var pixels = PixelBuffer(width: width, height: height, layout: top.layout, alphaMode: top.alphaMode) {
            (out: UnsafeMutableBufferPointer<UInt8>) in
            let copied = top.withUnsafeBytes { source in
                let count = min(source.count, out.count)
                out.baseAddress!.update(from: source.baseAddress!, count: count)
                return count
            }
            out.baseAddress!.advanced(by: copied).update(repeating: 0, count: out.count - copied)
        }
        let transforms = AVIFTransforms(full)
        if options.applyOrientation && !transforms.isIdentity { pixels = transforms.apply(to: pixels) }
        let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
        if target.width != pixels.width || target.height != pixels.height {
            pixels = pixels.areaResampled(width: target.width, height: target.height)
        }
        let metadata = ImageMetadata(
            orientation: options.applyOrientation ? .up : transforms.orientation,
            sourceOrientation: transforms.orientation, sourcePixelWidth: width, sourcePixelHeight: height,
            isPartial: true)
        return Image(pixels: pixels, format: .avif, metadata: metadata)
    }
}
