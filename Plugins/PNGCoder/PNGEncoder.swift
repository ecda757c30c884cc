internal import CPNG
internal import CPNGShim
import Foundation
import ImageCore

/// Encodes the first frame of an ``Image``: the shim's fast encoder (libdeflate) for the common case, libpng's
/// write API (inside the C shim, where setjmp lives) for Adam7 and for images carrying an ICC profile.
///
/// Effort: every row's filter is the one with the smallest residuals (the PNG spec's heuristic, libpng's default)
/// except at `.fast`, which uses Paeth on every row. `.fast` compresses at libdeflate level 1; `.balanced` picks
/// by content — level 1 for photographs (2-5 % larger than level 9 for a tenth of the time; about libpng's
/// default size, 1.5-3 % over it, at a tenth of its time), level 6 for photographs with large smooth areas (half
/// to four fifths zero residuals: level 9 takes many times longer there), level 9 for drawings, text and flat
/// colour (mostly zero residuals: at or under libpng's default size); `.best` is level 12. `progressive` writes Adam7
/// interlacing (libpng: zlib level 1, 6 or 9 by effort). Premultiplied input is converted to straight alpha. The
/// ICC profile in the metadata is written as iCCP when libpng accepts it. `quality` and `maxFileSize` do not
/// apply (PNG is lossless); `maxPixelSize` downscales with an area-average filter first.
enum PNGEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> Data {
        let pixels = try prepared(image.pixels, options: options)
        // libpng refuses a profile of another colour space than the pixels'.
        let bytes = try encode(
            pixels, iccProfile: image.metadata.iccProfile(for: pixels.layout) ?? [], options: options)
        return Data(bytes)
    }

    /// `pixels` at the size `maxPixelSize` allows, with straight alpha: what PNG stores.
    static func prepared(_ source: PixelBuffer, options: ImageEncodeOptions) throws(ImageError) -> PixelBuffer {
        var pixels = source
        guard pixels.width > 0, pixels.height > 0 else {
            throw ImageError(.encodeFailed, stage: .encode, message: "PNG: cannot encode an empty image")
        }
        if let limit = options.maxPixelSize, let size = fittedSize(pixels.width, pixels.height, inside: limit) {
            pixels = pixels.areaResampled(width: size.width, height: size.height)
        }
        if pixels.alphaMode == .premultiplied { pixels = straightened(pixels) }
        return pixels
    }

    /// Encodes prepared pixels (straight alpha) into a whole PNG file.
    static func encode(_ pixels: PixelBuffer, iccProfile icc: [UInt8], options: ImageEncodeOptions) throws -> [UInt8] {
        guard icc.isEmpty && !options.progressive else {
            return try encodeWithLibpng(pixels, iccProfile: icc, options: options)
        }
        switch options.effort {
        case .fast: return try encodeFast(pixels, level: 1, filter: 4)
        case .balanced: return try encodeFast(pixels, level: 0, filter: 5)
        case .best: return try encodeFast(pixels, level: 12, filter: 5)
        }
    }

    /// The shim's fast encoder: `filter` 0-4 on every row or 5 for the per-row heuristic, libdeflate `level` 1-12
    /// or 0 for the level by content (see `pngshim_fast.h`).
    static func encodeFast(_ pixels: PixelBuffer, level: Int32, filter: Int32) throws -> [UInt8] {
        var out = pngshim_buffer()
        defer { pngshim_buffer_free(&out) }
        var message = [CChar](repeating: 0, count: 256)
        let status = pixels.withUnsafeBytes { src in
            pngshim_fast_encode(
                src.baseAddress, UInt32(pixels.width), UInt32(pixels.height), pixels.bytesPerRow,
                Int32(pixels.layout.bytesPerPixel), level, filter, &out, &message, message.count)
        }
        guard status == Int32(PNGSHIM_OK), let bytes = out.data else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw PNGStatus.error(status: status, message: text, stage: .encode)
        }
        return Array(UnsafeBufferPointer(start: bytes, count: out.size))
    }

    /// Encodes with libpng: Adam7, and the iCCP chunk with libpng's checks of the profile.
    static func encodeWithLibpng(
        _ pixels: PixelBuffer, iccProfile icc: [UInt8], options: ImageEncodeOptions
    ) throws -> [UInt8] {
        let colorType: Int32
        switch pixels.layout {
        case .gray8: colorType = PNG_COLOR_TYPE_GRAY
        case .grayAlpha8: colorType = 4  // PNG_COLOR_TYPE_GRAY_ALPHA is a macro composition
        case .rgb8: colorType = PNG_COLOR_TYPE_RGB
        case .rgba8: colorType = 6  // PNG_COLOR_TYPE_RGB_ALPHA
        }
        let (level, filters): (Int32, Int32)
        switch options.effort {
        case .fast: (level, filters) = (1, PNG_FILTER_SUB)
        case .balanced: (level, filters) = (6, 0)
        case .best:
            (level, filters) = (9, PNG_FILTER_NONE | PNG_FILTER_SUB | PNG_FILTER_UP | PNG_FILTER_AVG | PNG_FILTER_PAETH)
        }
        var out = pngshim_buffer()
        defer { pngshim_buffer_free(&out) }
        var message = [CChar](repeating: 0, count: 256)
        let status = pixels.withUnsafeBytes { src in
            icc.withUnsafeBufferPointer { profile in
                pngshim_encode(
                    src.baseAddress, UInt32(pixels.width), UInt32(pixels.height), pixels.bytesPerRow, colorType,
                    level, filters, options.progressive ? 1 : 0, profile.baseAddress, profile.count, &out,
                    &message, message.count)
            }
        }
        guard status == Int32(PNGSHIM_OK), let bytes = out.data else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw PNGStatus.error(status: status, message: text, stage: .encode)
        }
        return Array(UnsafeBufferPointer(start: bytes, count: out.size))
    }

    /// The size that fits `width × height` inside `limit` keeping the aspect ratio; nil when it already fits.
    static func fittedSize(_ width: Int, _ height: Int, inside limit: PixelSize) -> PixelSize? {
        guard limit.width > 0, limit.height > 0, width > limit.width || height > limit.height else { return nil }
        let scale = min(Double(limit.width) / Double(width), Double(limit.height) / Double(height))
        return PixelSize(
            width: max(1, Int((Double(width) * scale).rounded())),
            height: max(1, Int((Double(height) * scale).rounded())))
    }

    /// Converts premultiplied colour back to straight alpha, which is what PNG stores.
    static func straightened(_ source: PixelBuffer) -> PixelBuffer {
        let channels = source.layout.bytesPerPixel
        let rowBytes = source.width * channels
        var bytes = [UInt8](repeating: 0, count: rowBytes * source.height)
        source.withUnsafeBytes { src in
            bytes.withUnsafeMutableBufferPointer { dst in
                for y in 0..<source.height {
                    for x in 0..<source.width {
                        let s = y * source.bytesPerRow + x * channels
                        let d = y * rowBytes + x * channels
                        let alpha = Int(src[s + channels - 1])
                        for c in 0..<channels - 1 {
                            dst[d + c] = alpha == 0 ? 0 : UInt8(min(255, (Int(src[s + c]) * 255 + alpha / 2) / alpha))
                        }
                        dst[d + channels - 1] = UInt8(alpha)
                    }
                }
            }
        }
        return PixelBuffer(
            width: source.width, height: source.height, layout: source.layout, alphaMode: .straight, bytes: bytes)
    }
}
