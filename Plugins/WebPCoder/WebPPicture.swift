internal import CWebP
import ImageCore

/// Owns one `WebPPicture` (heap-allocated, so libwebp's internal pointers to it stay valid); frees it in
/// `deinit`. Used for encoding and for libwebp's alpha-aware rescaler. Not thread-safe: one call.
final class WebPPictureHandle {
    let picture: UnsafeMutablePointer<WebPPicture>

    /// Imports tightly packed straight RGBA; `hasAlpha` false imports it as RGBX (no alpha plane).
    init(rgba: [UInt8], width: Int, height: Int, hasAlpha: Bool, useARGB: Bool) throws(ImageError) {
        picture = .allocate(capacity: 1)
        picture.initialize(to: WebPPicture())
        guard WebPPictureInit(picture) != 0 else {
            throw WebPErrors.encode(VP8_ENC_ERROR_INVALID_CONFIGURATION, "libwebp version mismatch")
        }
        picture.pointee.width = Int32(width)
        picture.pointee.height = Int32(height)
        picture.pointee.use_argb = useARGB ? 1 : 0
        let imported = rgba.withUnsafeBufferPointer { source -> Int32 in
            hasAlpha
                ? WebPPictureImportRGBA(picture, source.baseAddress, Int32(width * 4))
                : WebPPictureImportRGBX(picture, source.baseAddress, Int32(width * 4))
        }
        guard imported != 0 else { throw WebPErrors.encode(picture.pointee.error_code, "cannot import pixels") }
    }

    deinit {
        WebPPictureFree(picture)
        picture.deallocate()
    }

    /// Rescales in place with libwebp's rescaler (alpha-premultiplied internally, so edges stay clean).
    func rescale(to size: PixelSize) throws(ImageError) {
        guard size.width != Int(picture.pointee.width) || size.height != Int(picture.pointee.height) else { return }
        guard WebPPictureRescale(picture, Int32(size.width), Int32(size.height)) != 0 else {
            throw WebPErrors.encode(picture.pointee.error_code, "cannot rescale")
        }
    }

    /// The ARGB plane as tightly packed RGBA bytes (requires `use_argb`).
    func rgbaBytes() -> [UInt8] {
        let width = Int(picture.pointee.width)
        let height = Int(picture.pointee.height)
        let stride = Int(picture.pointee.argb_stride)
        var out = [UInt8](repeating: 0, count: width * height * 4)
        guard let argb = picture.pointee.argb else { return out }
        out.withUnsafeMutableBufferPointer { dst in
            for y in 0..<height {
                for x in 0..<width {
                    let pixel = argb[y * stride + x]
                    let d = (y * width + x) * 4
                    dst[d] = UInt8(truncatingIfNeeded: pixel >> 16)
                    dst[d + 1] = UInt8(truncatingIfNeeded: pixel >> 8)
                    dst[d + 2] = UInt8(truncatingIfNeeded: pixel)
                    dst[d + 3] = UInt8(truncatingIfNeeded: pixel >> 24)
                }
            }
        }
        return out
    }
}

/// Pixel conversions the WebP coder needs.
enum WebPPixels {
    /// Tightly packed straight-alpha RGBA of `buffer`, and whether any pixel is not opaque.
    static func straightRGBA(_ buffer: PixelBuffer) -> (rgba: [UInt8], hasAlpha: Bool) {
        let rgba = buffer.straightRGBABytes()
        guard buffer.layout.hasAlpha else { return (rgba, false) }
        var hasAlpha = false
        rgba.withUnsafeBufferPointer { bytes in
            var index = 3
            while index < bytes.count {
                if bytes[index] != 255 {
                    hasAlpha = true
                    break
                }
                index += 4
            }
        }
        return (rgba, hasAlpha)
    }

    /// Straight RGBA scaled to `target` with libwebp's rescaler.
    static func resample(_ rgba: [UInt8], from size: PixelSize, to target: PixelSize) throws(ImageError) -> [UInt8] {
        if size == target { return rgba }
        let picture = try WebPPictureHandle(
            rgba: rgba, width: size.width, height: size.height, hasAlpha: true, useARGB: true)
        try picture.rescale(to: target)
        return picture.rgbaBytes()
    }

    /// The size that fits `size` inside `limit`, keeping the aspect ratio; never larger.
    static func fit(_ size: PixelSize, inside limit: PixelSize) -> PixelSize {
        guard limit.width > 0, limit.height > 0, size.width > limit.width || size.height > limit.height else {
            return size
        }
        let scale = min(Double(limit.width) / Double(size.width), Double(limit.height) / Double(size.height))
        return PixelSize(
            width: max(1, Int((Double(size.width) * scale).rounded())),
            height: max(1, Int((Double(size.height) * scale).rounded())))
    }
}
