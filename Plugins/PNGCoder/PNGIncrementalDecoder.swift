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

/// Decodes a PNG from a growing prefix with libpng's progressive reader (`png_process_data`, driven by the C shim).
///
/// Partial images have the full size; rows (or Adam7 pass pixels) not received yet are zero, i.e. transparent for
/// RGBA and black otherwise. For an APNG the previews show the default image's rows when it is the first frame,
/// and nothing when it is not part of the animation (the final image is then the first frame, not the default
/// image). Once the bytes are final, the image is a full decode of the same bytes
/// through ``PNGDecoder`` (the simplified API), so it equals ``PNGCoder/decode(_:options:)`` exactly; before that,
/// even with IEND received, the image is the progressive reader's, marked partial. Errors the
/// progressive reader meets before the end only stop previews; the final decode decides. The pixel budget is
/// enforced in the header callback before the row buffer is allocated.
///
/// Not thread-safe: one owner drives it from one thread at a time, as ``IncrementalImageDecoder`` requires.
final class PNGIncrementalDecoder: IncrementalImageDecoder {
    private let options: ImageDecodeOptions
    private let reader: PNGProgressiveReader?
    private var data = Data()
    private var fedCount = 0
    private var isFinal = false
    private var status = Int32(PNGSHIM_OK)
    private var headerChecked = false
    private var final: Result<Image, any Error>?
    private var partial: (rows: UInt64, image: Image)?
    /// Decided once image rows arrived (the chunks before the first IDAT are then complete).
    private var defaultImageHidden: Bool?

    init(options: ImageDecodeOptions) {
        self.options = options
        self.reader = PNGProgressiveReader(maxPixels: options.maxPixelCount)
    }

    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
        // The budget is checked from IHDR as soon as it arrived: libpng's header callback only runs at the first
        // IDAT, and a hostile stream could delay that indefinitely.
        if !headerChecked, let chunks = PNGChunks.read(data, scanAll: false) {
            headerChecked = true
            if (try? options.checkPixelBudget(width: chunks.width, height: chunks.height)) == nil {
                status = Int32(PNGSHIM_TOO_LARGE)
            }
        }
        guard let reader, status == Int32(PNGSHIM_OK), data.count > fedCount else { return }
        let start = data.startIndex + fedCount
        status = data[start...].withUnsafeBytes { bytes in
            pngshim_reader_feed(reader.handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        fedCount = data.count
    }

    func currentImage() throws -> Image? {
        if status == Int32(PNGSHIM_TOO_LARGE) {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "PNG: the header exceeds the budget of \(options.maxPixelCount) pixels")
        }
        if isFinal {
            if final == nil { final = Result { try PNGDecoder.decode(data, options: options) } }
            return try final?.get()
        }
        // Before the caller says the bytes are final, every image is a preview and says so (isPartial), even
        // when IEND already arrived: a complete decode is only returned, unmarked, once `isFinal`.
        guard status == Int32(PNGSHIM_OK) || status == Int32(PNGSHIM_DONE), let reader else { return nil }
        // An APNG whose default image is not a frame: its rows would preview a picture the animation never shows.
        if defaultImageHidden == nil, pngshim_reader_rows_delivered(reader.handle) > 0 {
            defaultImageHidden = data.withUnsafeBytes { APNGStructure.defaultImageIsHidden($0) }
        }
        if defaultImageHidden == true { return nil }
        return partialImage(reader)
    }

    /// Copies the rows decoded so far into a full-size image, reusing the last copy when nothing new arrived.
    private func partialImage(_ reader: PNGProgressiveReader) -> Image? {
        let rows = pngshim_reader_rows_delivered(reader.handle)
        guard rows > 0 else { return nil }
        if let partial, partial.rows == rows { return partial.image }
        guard var pixels = reader.pixels() else { return nil }
        let (width, height) = (pixels.width, pixels.height)
        let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
        if target.width != pixels.width || target.height != pixels.height {
            pixels = pixels.areaResampled(width: target.width, height: target.height)
        }
        let metadata = ImageMetadata(
            sourcePixelWidth: width, sourcePixelHeight: height, isPartial: true)
        let image = Image(pixels: pixels, format: .png, metadata: metadata)
        partial = (rows, image)
        return image
    }
}
