internal import CPNG
internal import CPNGShim
import Foundation
import ImageCore

/// Full decodes through libpng's simplified API (`png_image_*`), which reports errors by status, never longjmp.
///
/// A PNG with a valid `acTL` goes to ``APNGDecoder`` (see ``APNGStructure`` for what makes it an animation).
/// Output layout: RGBA8 (straight alpha) when the image has an alpha channel or a tRNS chunk, RGB8 for colour and
/// palette images without alpha, gray8 for gray ones. 16-bit samples are scaled to 8 bits (treated as sRGB-encoded,
/// like browsers do); gAMA/sRGB/cHRM are resolved by libpng to sRGB output. Thread-safe: no shared state.
enum PNGDecoder {
    // png.h's PNG_FORMAT_FLAG_* and PNG_IMAGE_FLAG_* are function-like macro compositions Swift cannot import.
    private static let formatFlagAlpha: UInt32 = 0x01
    private static let formatFlagColor: UInt32 = 0x02
    private static let imageFlag16BitSRGB: UInt32 = 0x04

    /// Decodes `data` honouring the budget, thumbnail and scale-down options.
    static func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let chunks = try header(of: data, scanAll: true)
        try options.checkPixelBudget(width: chunks.width, height: chunks.height)
        // An animation's chunk walk refuses chunks that run past the end itself (and libpng only ever sees the
        // complete chunks of each frame's stream).
        if let control = data.withUnsafeBytes({ APNGStructure.animationControl($0) }).control {
            return try APNGDecoder.decode(data, header: chunks, control: control, options: options)
        }
        if let overlong = chunks.overlongChunk {
            // Refused before libpng would allocate (and zero) the declared length for data that is not there.
            throw PNGStatus.badData(
                "\(overlong.type) chunk declares \(overlong.length) bytes past the end of the data")
        }
        let pixels = try decodePixels(data, chunks: chunks, options: options).pixels
        let metadata = ImageMetadata(
            iccProfile: chunks.hasICCP ? iccProfile(of: data) : nil, exif: chunks.exif,
            sourcePixelWidth: chunks.width, sourcePixelHeight: chunks.height)
        return Image(pixels: pixels, format: .png, metadata: metadata)
    }

    /// The pixels at the size `options` ask for: a smaller size is reduced while decoding (rows in strips through
    /// the area reducer; see ``PNGRowDecoder``) unless the image is interlaced and not the fast reader's, which
    /// decodes in full and is then resampled. The report is nil for a full decode.
    static func decodePixels(
        _ data: Data, chunks: PNGChunks, options: ImageDecodeOptions
    ) throws -> (pixels: PixelBuffer, report: PNGRowDecodeReport?) {
        let target = options.targetSize(forSourceWidth: chunks.width, height: chunks.height)
        let reduced = target.width != chunks.width || target.height != chunks.height
        if reduced, let result = try PNGRowDecoder.decode(data, target: target, maxPixels: options.maxPixelCount) {
            return (result.0, result.1)
        }
        let pixels = try decodePixels(data, chunks: chunks, maxPixels: options.maxPixelCount)
        return (reduced ? pixels.areaResampled(width: target.width, height: target.height) : pixels, nil)
    }

    /// The signature and IHDR, or a `badImageData` error.
    static func header(of data: Data, scanAll: Bool) throws(ImageError) -> PNGChunks {
        guard let chunks = PNGChunks.read(data, scanAll: scanAll) else {
            throw PNGStatus.badData(data.count < 33 ? "too short for a PNG header" : "missing PNG signature or IHDR")
        }
        return chunks
    }

    /// Decodes the whole image at its stored size: the fast reader for the common PNG, libpng for the rest.
    static func decodePixels(_ data: Data, chunks: PNGChunks, maxPixels: Int = .max) throws -> PixelBuffer {
        try data.withUnsafeBytes { bytes in
            if let pixels = try PNGFastReader.decode(bytes, maxPixels: maxPixels) { return pixels }
            return try decodePixels(bytes, chunks: chunks, rgba: false)
        }
    }

    /// Decodes the PNG in `bytes` at its stored size; with `rgba`, always as straight RGBA8 (what the APNG
    /// compositor draws with).
    static func decodePixels(_ bytes: UnsafeRawBufferPointer, chunks: PNGChunks, rgba: Bool) throws -> PixelBuffer {
        // libpng 1.6.39's simplified API garbles about half the pixels of Adam7-interlaced 16-bit images when it
        // reduces them to 8 bits (every colour type; found by PNGDecodeTests). Those go through the regular API in
        // the shim's reader instead, which applies the same transforms.
        if chunks.interlaced && chunks.bitDepth == 16 {
            let pixels = try decodeWithReader(bytes)
            guard rgba, pixels.layout != .rgba8 else { return pixels }
            return PixelBuffer(
                width: pixels.width, height: pixels.height, layout: .rgba8, alphaMode: .straight,
                bytes: pixels.straightRGBABytes())
        }
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        // png_image_free releases libpng's state on every path (it is a no-op when begin_read already freed it).
        defer { png_image_free(&image) }
        guard png_image_begin_read_from_memory(&image, bytes.baseAddress, bytes.count) != 0 else {
            throw PNGStatus.error(status: Int32(PNGSHIM_ERROR), message: message(of: &image), stage: .decode)
        }
        let width = Int(image.width)
        let height = Int(image.height)
        guard width == chunks.width, height == chunks.height else {
            throw PNGStatus.badData("IHDR size disagrees with libpng")
        }
        let hasAlpha = rgba || image.format & formatFlagAlpha != 0
        let isColor = rgba || image.format & formatFlagColor != 0
        let layout: PixelLayout = hasAlpha ? .rgba8 : (isColor ? .rgb8 : .gray8)
        image.format = hasAlpha ? (formatFlagColor | formatFlagAlpha) : (isColor ? formatFlagColor : 0)
        image.flags |= imageFlag16BitSRGB
        let rowBytes = width * layout.bytesPerPixel
        let (_, overflow) = rowBytes.multipliedReportingOverflow(by: height)
        guard !overflow, rowBytes <= Int(Int32.max) else {
            throw ImageError(.imageTooLarge, stage: .decode, message: "PNG: \(width)x\(height) overflows memory")
        }
        // Straight into pooled storage: libpng either writes every row or fails, and a failure makes no buffer.
        return try PixelBuffer(
            validatingWidth: width, height: height, layout: layout, alphaMode: .straight, bytesPerRow: rowBytes
        ) { (buffer) throws(ImageError) in
            guard png_image_finish_read(&image, nil, buffer.baseAddress, Int32(rowBytes), nil) != 0 else {
                throw PNGStatus.error(status: Int32(PNGSHIM_ERROR), message: message(of: &image), stage: .decode)
            }
        }
    }

    /// Decodes the whole stream with the shim's libpng reader (regular API, setjmp inside the shim).
    ///
    /// The budget was checked by the caller; the reader checks it again before allocating.
    static func decodeWithReader(_ bytes: UnsafeRawBufferPointer) throws -> PixelBuffer {
        guard let reader = PNGProgressiveReader(maxPixels: Int.max) else {
            throw ImageError(.imageTooLarge, stage: .decode, message: "PNG: out of memory")
        }
        let status = pngshim_reader_feed(
            reader.handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard status == Int32(PNGSHIM_DONE), let pixels = reader.pixels() else {
            let message = status == Int32(PNGSHIM_OK) ? "truncated image data" : reader.message
            throw PNGStatus.error(
                status: status == Int32(PNGSHIM_OK) ? Int32(PNGSHIM_ERROR) : status, message: message, stage: .decode)
        }
        return pixels
    }

    /// The iCCP profile bytes, read by the shim's header pass; nil when absent or unreadable.
    static func iccProfile(of data: Data) -> [UInt8]? {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> [UInt8]? in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var profile: UnsafeMutablePointer<UInt8>?
            var length = 0
            let status = pngshim_read_iccp(base, bytes.count, &profile, &length)
            defer { free(profile) }
            guard status == Int32(PNGSHIM_OK), let profile, length > 0 else { return nil }
            return Array(UnsafeBufferPointer(start: profile, count: length))
        }
    }

    /// The NUL-terminated message libpng left in the image's fixed-size buffer.
    private static func message(of image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
