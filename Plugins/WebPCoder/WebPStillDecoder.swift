internal import CWebP
import Foundation
import ImageCore

/// The header facts of a WebP file that decoding needs.
struct WebPHeader: Sendable {
    var width: Int
    var height: Int
    var hasAlpha: Bool
    var hasAnimation: Bool

    /// Reads the header of `data`; see ``read(_:)-(UnsafeRawBufferPointer)``.
    static func read(_ data: Data) throws(ImageError) -> WebPHeader {
        try data.withUnsafeBytes { raw in Result { () throws(ImageError) in try read(raw) } }.get()
    }

    /// Reads the header with `WebPGetFeatures` (no pixel decoding, no allocation).
    static func read(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> WebPHeader {
        var features = WebPBitstreamFeatures()
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw WebPErrors.decode(VP8_STATUS_NOT_ENOUGH_DATA, "cannot read WebP header")
        }
        let status = WebPGetFeatures(base.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
        guard status == VP8_STATUS_OK else { throw WebPErrors.decode(status, "cannot read WebP header") }
        return WebPHeader(
            width: Int(features.width), height: Int(features.height), hasAlpha: features.has_alpha != 0,
            hasAnimation: features.has_animation != 0)
    }
}

/// Decodes still WebP (lossy, lossless, alpha) with `WebPDecode` straight into the pixel buffer, scaling inside
/// libwebp when a smaller size is asked for.
enum WebPStillDecoder {
    /// Output layout: RGBA (straight alpha) when the file has alpha, else RGB.
    static func layout(for header: WebPHeader) -> PixelLayout { header.hasAlpha ? .rgba8 : .rgb8 }

    static func decode(_ bytes: WebPBytes, header: WebPHeader, target: PixelSize) throws(ImageError) -> PixelBuffer {
        let layout = layout(for: header)
        let rowBytes = target.width * layout.bytesPerPixel
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else {
            throw WebPErrors.decode(VP8_STATUS_INVALID_PARAM, "libwebp version mismatch")
        }
        config.options.use_threads = 0  // already on a decode-pool thread
        if target.width != header.width || target.height != header.height {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(target.width)
            config.options.scaled_height = Int32(target.height)
        }
        config.output.colorspace = header.hasAlpha ? MODE_RGBA : MODE_RGB
        config.output.is_external_memory = 1
        // Straight into pooled storage: WebPDecode either writes every row or fails, and a failure makes no buffer.
        return try PixelBuffer(
            validatingWidth: target.width, height: target.height, layout: layout,
            alphaMode: header.hasAlpha ? .straight : nil, bytesPerRow: rowBytes
        ) { (out) throws(ImageError) in
            config.output.u.RGBA.rgba = out.baseAddress
            config.output.u.RGBA.stride = Int32(rowBytes)
            config.output.u.RGBA.size = out.count
            let input = bytes.webpData
            let status = WebPDecode(input.bytes, input.size, &config)
            WebPFreeDecBuffer(&config.output)  // external memory: releases nothing of ours, kept for symmetry
            guard status == VP8_STATUS_OK else { throw WebPErrors.decode(status, "cannot decode WebP") }
        }
    }
}
