internal import CPNGShim
import Foundation
import ImageCore

/// What a shrink-on-load decode held in memory (tests use it to prove a thumbnail never holds the full image
/// unless the image is small enough to inflate at once).
struct PNGRowDecodeReport: Equatable {
    /// Rows decoded per strip.
    var rowsPerStrip: Int
    /// Bytes of full-width source data held at once: a strip of rows, or the inflated image when the fast
    /// reader inflated it in one call (at most ``PNGFastReader/wholeInflateLimit``).
    var stripBytes: Int
    /// True when the fast reader decoded it (libpng otherwise).
    var fast: Bool
}

/// Owns one `pngshim_rows` reader; destroys it in `deinit`. Not thread-safe: one decode call.
final class PNGRowReader {
    let handle: OpaquePointer

    /// Opens a reader over `bytes`, which must stay valid for the reader's life.
    init(_ bytes: UnsafeRawBufferPointer, maxPixels: Int) throws(ImageError) {
        var reader: OpaquePointer?
        var message = [CChar](repeating: 0, count: 256)
        let status = pngshim_rows_open(
            bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, UInt64(max(0, maxPixels)), &reader,
            &message, message.count)
        guard status == Int32(PNGSHIM_OK), let reader else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw PNGStatus.error(
                status: status == Int32(PNGSHIM_OK) ? Int32(PNGSHIM_ERROR) : status, message: text, stage: .decode)
        }
        handle = reader
    }

    deinit { pngshim_rows_destroy(handle) }

    /// Width, height and channels of the rows (1, 3 or 4).
    var geometry: (width: Int, height: Int, channels: Int) {
        var width: UInt32 = 0
        var height: UInt32 = 0
        var channels: Int32 = 0
        pngshim_rows_geometry(handle, &width, &height, &channels)
        return (Int(width), Int(height), Int(channels))
    }

    /// Decodes the next `count` rows into `pixels`, `bytesPerRow` apart.
    func read(into pixels: UnsafeMutablePointer<UInt8>, bytesPerRow: Int, count: Int) throws(ImageError) {
        let status = pngshim_rows_read(handle, pixels, bytesPerRow, UInt32(count))
        guard status == Int32(PNGSHIM_OK) else {
            throw PNGStatus.error(
                status: status, message: String(cString: pngshim_rows_message(handle)), stage: .decode)
        }
    }
}

/// Shrink-on-load: rows are decoded a strip at a time and fed to ImageCore's area reducer, so a thumbnail of a
/// 12 MP PNG holds a strip of rows and the thumbnail, never the decoded image.
///
/// The fast reader (``PNGFastReader``) takes the common PNG, interlaced ones included (it assembles Adam7 rows
/// from the inflated passes); an image of at most ``PNGFastReader/wholeInflateLimit`` inflated bytes is inflated
/// at once, larger ones stream. Other files go through libpng's sequential reader (`pngshim_rows.c`, the full
/// decode's libpng transforms); interlaced ones it cannot read row by row are the caller's (full decode, then
/// resample). Either way the result is byte for byte what the full decode followed by `areaResampled` gives.
/// Thread-safe: no shared state.
enum PNGRowDecoder {
    /// Decoded bytes per strip (a few hundred KB whatever the image size).
    static let stripBytes = 256 * 1024

    /// Rows per strip for rows of `rowBytes` bytes.
    static func rowsPerStrip(_ rowBytes: Int) -> Int { max(1, stripBytes / max(1, rowBytes)) }

    /// Decodes `data` reduced to `target`, with the budget `maxPixels` checked again by the reader; nil when the
    /// file is interlaced and not the fast reader's (the caller decodes it in full).
    static func decode(
        _ data: Data, target: PixelSize, maxPixels: Int, wholeInflateLimit: Int = PNGFastReader.wholeInflateLimit
    ) throws -> (PixelBuffer, PNGRowDecodeReport)? {
        try data.withUnsafeBytes { bytes in
            if let fast = try PNGFastReader(bytes, maxPixels: maxPixels, wholeInflateLimit: wholeInflateLimit),
                let result = try reduce(fast, to: target)
            {
                return result
            }
            guard let chunks = PNGChunks.read(bytes, scanAll: false), !chunks.interlaced else { return nil }
            return try reduceWithLibpng(bytes, target: target, maxPixels: maxPixels)
        }
    }

    /// The fast reader's rows into the reducer; nil when the reader hands the file back to libpng.
    private static func reduce(_ reader: PNGFastReader, to target: PixelSize) throws -> (
        PixelBuffer, PNGRowDecodeReport
    )? {
        let reducer = AreaReducer(
            sourceWidth: reader.width, sourceHeight: reader.height, width: target.width, height: target.height,
            layout: reader.layout, alphaMode: .straight)
        let rows = min(reader.height, rowsPerStrip(reader.width * reader.channels))
        var row = 0
        var held = 0
        while row < reader.height {
            let count = min(rows, reader.height - row)
            guard let strip = try reader.read(count: count) else { return nil }
            reducer.push(rows: strip.rows, count: count, bytesPerRow: strip.stride)
            held = max(held, reader.heldBytes)
            row += count
        }
        return (reducer.finish(), PNGRowDecodeReport(rowsPerStrip: rows, stripBytes: held, fast: true))
    }

    /// libpng's sequential reader into the reducer (non-interlaced files only).
    private static func reduceWithLibpng(
        _ bytes: UnsafeRawBufferPointer, target: PixelSize, maxPixels: Int
    ) throws -> (PixelBuffer, PNGRowDecodeReport) {
        let reader = try PNGRowReader(bytes, maxPixels: maxPixels)
        let (width, height, channels) = reader.geometry
        guard width > 0, height > 0 else { throw PNGStatus.badData("image has no rows") }
        let layout: PixelLayout = channels == 4 ? .rgba8 : (channels == 3 ? .rgb8 : .gray8)
        let rowBytes = width * channels
        let rows = min(height, rowsPerStrip(rowBytes))
        let strip = UnsafeMutablePointer<UInt8>.allocate(capacity: rows * rowBytes)
        defer { strip.deallocate() }
        let reducer = AreaReducer(
            sourceWidth: width, sourceHeight: height, width: target.width, height: target.height, layout: layout,
            alphaMode: .straight)
        var row = 0
        while row < height {
            let count = min(rows, height - row)
            try reader.read(into: strip, bytesPerRow: rowBytes, count: count)
            reducer.push(rows: strip, count: count, bytesPerRow: rowBytes)
            row += count
        }
        return (reducer.finish(), PNGRowDecodeReport(rowsPerStrip: rows, stripBytes: rows * rowBytes, fast: false))
    }
}
