import Foundation
import ImageCore

/// Incremental JPEG XL decoding: previews of the first frame at libjxl's progressive steps, as bytes arrive.
///
/// libjxl reports a step (`JXL_DEC_FRAME_PROGRESSION`) when the 1:8 DC image of a frame is decoded and after each
/// AC pass of a progressive file; each step is flushed (`JxlDecoderFlushImage`) into a full-size partial image
/// (``ImageMetadata/isPartial``), upsampled where detail is still missing. Once the first frame is complete, that
/// frame is the preview until the bytes are final. The pixel budget is checked from the size header as soon as it
/// arrives (and again from libjxl's basic info). A preview that fails only stops previews; once `isFinal`, the
/// result is exactly ``JXLCoder/decode(_:options:)`` of the same bytes. Not thread-safe (one thread at a time).
final class JXLIncrementalDecoder: IncrementalImageDecoder {
    private let coder: JXLCoder
    private let options: ImageDecodeOptions
    private var data = Data()
    private var isFinal = false
    private var handle: JXLDecoderHandle?
    private var done = false
    private var partial: Image?
    private var final: Image?

    init(coder: JXLCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    func currentImage() throws -> Image? {
        if isFinal {
            if let final { return final }
            let image = try coder.decode(data, options: options)
            final = image
            return image
        }
        guard let header = data.withUnsafeBytes({ JXLHeader.read($0) }) else { return nil }
        try options.checkPixelBudget(width: header.width, height: header.height)
        guard !done else { return partial }
        do {
            return try preview(header)
        } catch  where error.code == .imageTooLarge {
            throw error
        } catch {
            // A preview that fails is no preview; the final decode reports what is wrong with the file.
            done = true
            return partial
        }
    }

    private func preview(_ header: JXLHeader) throws(ImageError) -> Image? {
        let handle: JXLDecoderHandle
        if let existing = self.handle {
            handle = existing
        } else {
            handle = try JXLDecoderHandle(data: data, isFinal: false, progressive: true, maxThreads: 1)
            self.handle = handle
        }
        handle.update(data, isFinal: false)
        while true {
            switch try handle.next() {
            case .basicInfo:
                try options.checkPixelBudget(width: handle.storedSize.width, height: handle.storedSize.height)
            case .needImageOutBuffer:
                try handle.setStreamingBuffer()
            case .progression:
                if let pixels = handle.flushedPixels() { partial = try makePartial(pixels, header: header) }
            case .fullImage:
                if let pixels = handle.streamedPixels() { partial = try makePartial(pixels, header: header) }
                done = true
                return partial
            case .success:
                done = true
                return partial
            case .needMoreInput:
                return partial
            case .frame:
                continue
            }
        }
    }

    /// Full-size samples of the first frame as a preview, oriented and resampled as a full decode would be.
    private func makePartial(_ bytes: [UInt8], header: JXLHeader) throws(ImageError) -> Image {
        guard let handle else { throw JXLStatus.badData("no decoder") }
        let stored = handle.storedSize
        let orientation = ImageOrientation(rawValue: Int(handle.info?.orientation.rawValue ?? 1)) ?? .up
        let layout = handle.layout
        let premultiplied = layout.hasAlpha && (handle.info?.alpha_premultiplied ?? 0) != 0
        var pixels = try PixelBuffer(
            width: stored.width, height: stored.height, layout: layout,
            alphaMode: premultiplied ? .premultiplied : .straight, validating: bytes)
        if options.applyOrientation { pixels = pixels.oriented(orientation) }
        let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
        if target.width != pixels.width || target.height != pixels.height {
            pixels = pixels.areaResampled(width: target.width, height: target.height)
        }
        let metadata = ImageMetadata(
            orientation: options.applyOrientation ? .up : orientation, sourceOrientation: orientation,
            iccProfile: handle.iccProfile, exif: header.exif, sourcePixelWidth: stored.width,
            sourcePixelHeight: stored.height, isPartial: true)
        return Image(pixels: pixels, format: .jxl, metadata: metadata)
    }
}
