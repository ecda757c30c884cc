internal import CPNG
internal import CPNGShim
import Foundation
import ImageCore

/// Encodes the first frame of an ``Image`` with libpng's write API, inside the C shim (setjmp lives there).
///
/// Effort: `.fast` is zlib level 1 with the SUB filter only (about 3x faster than the default for ~15% larger
/// files on photos), `.balanced` is libpng's default (level 6, adaptive filters), `.best` level 9 with every
/// filter tried. `progressive` writes Adam7 interlacing. Premultiplied input is converted to straight alpha.
/// The ICC profile in the metadata is written as iCCP when libpng accepts it. `quality` and `maxFileSize` do not
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
        let status = pixels.bytes.withUnsafeBufferPointer { src in
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
        source.bytes.withUnsafeBufferPointer { src in
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
