import Foundation
import ImageCore

/// JPEG XL's step of the incremental decoder: previews of the first frame at libjxl's progressive steps, as
/// bytes arrive.
///
/// libjxl reports a step (`JXL_DEC_FRAME_PROGRESSION`) when the 1:8 DC image of a frame is decoded and after each
/// AC pass of a progressive file; each step is flushed (`JxlDecoderFlushImage`) into a full-size preview,
/// upsampled where detail is still missing. Once the first frame is complete, that frame is the preview until the
/// bytes are final. The size header gives the size the scaffold checks against the budget (libjxl's basic info is
/// checked again). The final image is exactly ``JXLCoder/decode(_:options:)`` of the same bytes.
final class JXLIncrementalStep: IncrementalDecoderStep {
    private let coder: JXLCoder
    private let options: ImageDecodeOptions
    private var header: JXLHeader?
    private var handle: JXLDecoderHandle?

    init(coder: JXLCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    func header(in data: Data) throws -> PixelSize? {
        guard let read = data.withUnsafeBytes({ JXLHeader.read($0) }) else { return nil }
        header = read
        return PixelSize(width: read.width, height: read.height)
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        guard let header else { return .nothingNew }
        let handle = try self.handle ?? JXLDecoderHandle(data: data, isFinal: false, progressive: true, maxThreads: 1)
        self.handle = handle
        handle.update(data, isFinal: false)
        var latest: Image?
        do {
            return try advance(handle, header: header, latest: &latest)
        } catch {
            // A step shown before the failure is the last preview; the final decode reports the failure.
            guard error.code != .imageTooLarge, let latest else { throw error }
            return .finished(latest)
        }
    }

    /// Runs libjxl over the new bytes, keeping the newest progressive step in `latest`.
    private func advance(
        _ handle: JXLDecoderHandle, header: JXLHeader, latest: inout Image?
    ) throws(ImageError) -> IncrementalPreview {
        while true {
            switch try handle.next() {
            case .basicInfo:
                try options.checkPixelBudget(width: handle.storedSize.width, height: handle.storedSize.height)
            case .needImageOutBuffer:
                try handle.setStreamingBuffer()
            case .progression:
                if let pixels = handle.flushedPixels() { latest = try makePartial(pixels, header: header) }
            case .fullImage:
                if let pixels = handle.streamedPixels() { latest = try makePartial(pixels, header: header) }
                return .finished(latest)
            case .success:
                return .finished(latest)
            case .needMoreInput:
                return latest.map { .image($0) } ?? .nothingNew
            case .frame:
                continue
            }
        }
    }

    func decodeFinal(_ data: Data) throws -> Image { try coder.decode(data, options: options) }

    /// Full-size samples of the first frame as a preview, oriented and resampled as a full decode would be.
    private func makePartial(_ bytes: [UInt8], header: JXLHeader) throws(ImageError) -> Image {
        guard let handle else { throw JXLStatus.badData("no decoder") }
        let stored = handle.storedSize
        let orientation = ImageOrientation(rawValue: Int(handle.info?.orientation.rawValue ?? 1)) ?? .up
        let pixels = try JXLFrameReader.pixels(bytes, from: handle, orientation: orientation, options: options)
        let metadata = ImageMetadata(
            orientation: options.applyOrientation ? .up : orientation, sourceOrientation: orientation,
            iccProfile: handle.iccProfile, exif: header.exif, sourcePixelWidth: stored.width,
            sourcePixelHeight: stored.height, isPartial: true)
        return Image(pixels: pixels, format: .jxl, metadata: metadata)
    }
}
