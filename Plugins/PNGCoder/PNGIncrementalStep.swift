internal import CPNGShim
import Foundation
import ImageCore

/// Owns one `pngshim_reader` (libpng's progressive reader) and frees it in `deinit`.
final class PNGProgressiveReader {
    let handle: OpaquePointer

    init?(maxPixels: Int) {
        guard let handle = pngshim_reader_create(UInt64(max(0, maxPixels))) else { return nil }
        self.handle = handle
    }

    deinit { pngshim_reader_destroy(handle) }

    /// The last libpng message.
    var message: String { String(cString: pngshim_reader_message(handle)) }

    /// A copy of the output pixels (undecoded rows are zero); nil before the header was read.
    func pixels() -> PixelBuffer? {
        var width: UInt32 = 0
        var height: UInt32 = 0
        var channels: Int32 = 0
        var bytesPerRow = 0
        guard pngshim_reader_geometry(handle, &width, &height, &channels, &bytesPerRow) != 0,
            let source = pngshim_reader_pixels(handle)
        else { return nil }
        let layout: PixelLayout = channels == 4 ? .rgba8 : (channels == 3 ? .rgb8 : .gray8)
        let bytes = Array(UnsafeBufferPointer(start: source, count: bytesPerRow * Int(height)))
        return try? PixelBuffer(
            width: Int(width), height: Int(height), layout: layout, alphaMode: .straight, bytesPerRow: bytesPerRow,
            validating: bytes)
    }
}

/// PNG's step of the incremental decoder, on libpng's progressive reader (`png_process_data`, driven by the C shim).
///
/// Previews have the full size; rows (or Adam7 pass pixels) not received yet are zero, i.e. transparent for RGBA
/// and black otherwise. For an APNG the previews show the default image's rows when it is the first frame, and
/// nothing when it is not part of the animation (the final image is then the first frame, not the default image).
/// IHDR gives the size the scaffold checks against the budget before a byte reaches libpng (whose header callback
/// only runs at the first IDAT, which a hostile stream could delay indefinitely); the reader checks it again before
/// it allocates rows. An error the progressive reader meets only stops previews. The final image is
/// ``PNGCoder/decode(_:options:)`` of the same bytes (libpng's simplified API).
final class PNGIncrementalStep: IncrementalDecoderStep {
    private let coder: PNGCoder
    private let options: ImageDecodeOptions
    private let reader: PNGProgressiveReader?
    private var fedCount = 0
    private var rows: UInt64 = 0
    /// Decided once image rows arrived (the chunks before the first IDAT are then complete).
    private var defaultImageHidden: Bool?

    init(coder: PNGCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
        self.reader = PNGProgressiveReader(maxPixels: options.maxPixelCount)
    }

    func header(in data: Data) throws -> PixelSize? {
        PNGChunks.read(data, scanAll: false).map { PixelSize(width: $0.width, height: $0.height) }
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        guard let reader else { return .finished(nil) }
        let status = data[(data.startIndex + fedCount)...].withUnsafeBytes { bytes in
            pngshim_reader_feed(reader.handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        fedCount = data.count
        if status == Int32(PNGSHIM_TOO_LARGE) {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "PNG: the header exceeds the budget of \(options.maxPixelCount) pixels")
        }
        guard status == Int32(PNGSHIM_OK) || status == Int32(PNGSHIM_DONE) else { return .finished(nil) }
        let delivered = pngshim_reader_rows_delivered(reader.handle)
        guard delivered > 0, delivered != rows else { return .nothingNew }
        // An APNG whose default image is not a frame: its rows would preview a picture the animation never shows.
        if defaultImageHidden == nil {
            defaultImageHidden = data.withUnsafeBytes { APNGStructure.defaultImageIsHidden($0) }
        }
        if defaultImageHidden == true { return .finished(nil) }
        guard var pixels = reader.pixels() else { return .nothingNew }
        rows = delivered
        let (width, height) = (pixels.width, pixels.height)
        let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
        if target.width != pixels.width || target.height != pixels.height {
            pixels = pixels.areaResampled(width: target.width, height: target.height)
        }
        let metadata = ImageMetadata(sourcePixelWidth: width, sourcePixelHeight: height, isPartial: true)
        return .image(Image(pixels: pixels, format: .png, metadata: metadata))
    }

    func decodeFinal(_ data: Data) throws -> Image { try coder.decode(data, options: options) }
}
