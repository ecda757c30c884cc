internal import CPNGShim
import Foundation
import ImageCore

/// Owns one `pngshim_fast_reader` (libdeflate or zlib inflate, SIMD row reconstruction, no libpng); destroys it in
/// `deinit`. Not thread-safe: one decode call.
///
/// It takes the common PNG — 8-bit gray, gray + alpha, RGB or RGBA, no tRNS or PLTE, no gamma libpng would
/// correct, every CRC right — and gives exactly the pixels libpng's paths give. Anything else, including data
/// that turns out corrupt while rows are read, is a *fallback*: the caller decodes with libpng, which gives
/// today's answer for it. One difference is libdeflate's (see `pngshim_fast.h`): a stream using the deflate
/// codes the format reserves, which zlib refuses, decodes when its length and Adler-32 check.
final class PNGFastReader {
    /// Inflated bytes (rows with their filter bytes) up to which an image is inflated in one libdeflate call;
    /// larger images stream through zlib a strip at a time. 16 MiB holds a 5 MP RGB or 4 MP RGBA image: the
    /// one-shot inflate is ~1.7× zlib's speed on photos, paid for with that much memory while the decode runs.
    static let wholeInflateLimit = 16 << 20

    let handle: OpaquePointer
    let width: Int
    let height: Int
    /// Output channels: 1 (gray), 3 (RGB) or 4 (RGBA).
    let channels: Int
    /// True when the image was inflated at once (it is then held, filtered, for the reader's life).
    let isWhole: Bool

    /// Opens a reader over `bytes`, which must stay valid for the reader's life; nil when the file is libpng's.
    ///
    /// - Throws: `imageTooLarge` over `maxPixels` (the C side's own check; the coder checks first) or when out of
    ///   memory.
    init?(_ bytes: UnsafeRawBufferPointer, maxPixels: Int, wholeInflateLimit: Int = wholeInflateLimit)
        throws(ImageError)
    {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        var reader: OpaquePointer?
        let status = pngshim_fast_reader_open(
            base, bytes.count, UInt64(max(0, maxPixels)), max(0, wholeInflateLimit), &reader)
        switch status {
        case Int32(PNGSHIM_OK):
            guard let reader else { return nil }
            handle = reader
        case Int32(PNGSHIM_FALLBACK): return nil
        default:
            let message = status == Int32(PNGSHIM_TOO_LARGE) ? "image exceeds the pixel budget" : "out of memory"
            throw PNGStatus.error(status: status, message: message, stage: .decode)
        }
        var width: UInt32 = 0
        var height: UInt32 = 0
        var channels: Int32 = 0
        var whole: Int32 = 0
        pngshim_fast_reader_geometry(handle, &width, &height, &channels, &whole)
        self.width = Int(width)
        self.height = Int(height)
        self.channels = Int(channels)
        isWhole = whole != 0
    }

    deinit { pngshim_fast_reader_destroy(handle) }

    /// The layout of the rows.
    var layout: PixelLayout { channels == 4 ? .rgba8 : (channels == 3 ? .rgb8 : .gray8) }

    /// Bytes the reader holds now besides the caller's: the inflated image in one-shot mode, else a strip.
    var heldBytes: Int { pngshim_fast_reader_held_bytes(handle) }

    /// Reconstructs the next `count` rows; nil means "decode this file with libpng" (see the type's note).
    ///
    /// The rows are valid until the next call.
    func read(count: Int) throws(ImageError) -> (rows: UnsafePointer<UInt8>, stride: Int)? {
        var rows: UnsafePointer<UInt8>?
        var stride = 0
        let status = pngshim_fast_reader_read(handle, UInt32(count), &rows, &stride)
        switch status {
        case Int32(PNGSHIM_OK):
            guard let rows else { return nil }
            return (rows, stride)
        case Int32(PNGSHIM_NO_MEMORY):
            throw PNGStatus.error(status: status, message: "out of memory", stage: .decode)
        default: return nil
        }
    }

    /// The whole image at its stored size, or nil for libpng's files.
    static func decode(_ bytes: UnsafeRawBufferPointer, maxPixels: Int) throws(ImageError) -> PixelBuffer? {
        guard let reader = try PNGFastReader(bytes, maxPixels: maxPixels) else { return nil }
        let rowBytes = reader.width * reader.channels
        let (total, overflow) = rowBytes.multipliedReportingOverflow(by: reader.height)
        guard !overflow else {
            throw ImageError(.imageTooLarge, stage: .decode, message: "PNG: image overflows memory")
        }
        let strip = max(1, min(reader.height, PNGRowDecoder.rowsPerStrip(rowBytes)))
        var failure: ImageError?
        var complete = false
        let pixels = [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            do throws(ImageError) {
                var row = 0
                while row < reader.height {
                    let count = min(strip, reader.height - row)
                    guard let strip = try reader.read(count: count) else { return }
                    for i in 0..<count {
                        (base + (row + i) * rowBytes).update(from: strip.rows + i * strip.stride, count: rowBytes)
                    }
                    row += count
                }
                initialized = total
                complete = true
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        guard complete else { return nil }
        return PixelBuffer(
            width: reader.width, height: reader.height, layout: reader.layout, alphaMode: .straight, bytes: pixels)
    }
}
