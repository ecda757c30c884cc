internal import CWebP
import ImageCore

/// Owns one `WebPPicture` (heap-allocated, so libwebp's internal pointers to it stay valid); frees it in
/// `deinit`. Used for encoding and for libwebp's alpha-aware rescaler. Not thread-safe: one call.
final class WebPPictureHandle {
    let picture: UnsafeMutablePointer<WebPPicture>

    /// Imports `width × height` tightly packed straight RGBA pixels from `rgba` (copied: the picture owns its
    /// planes); `hasAlpha` false imports them as RGBX (no alpha plane).
    convenience init(
        rgba: UnsafeBufferPointer<UInt8>, width: Int, height: Int, hasAlpha: Bool, useARGB: Bool
    ) throws(ImageError) {
        precondition(rgba.count >= width * height * 4, "WebPPictureHandle: fewer bytes than the picture's size")
        try self.init(width: width, height: height, useARGB: useARGB)
        let imported =
            hasAlpha
            ? WebPPictureImportRGBA(picture, rgba.baseAddress, Int32(width * 4))
            : WebPPictureImportRGBX(picture, rgba.baseAddress, Int32(width * 4))
        guard imported != 0 else { throw WebPErrors.encode(picture.pointee.error_code, "cannot import pixels") }
    }

    /// Imports `pixels` straight from their storage, row padding included: RGB with `WebPPictureImportRGB`,
    /// straight RGBA with `WebPPictureImportRGBA` (`WebPPictureImportRGBX` when `hasAlpha` is false, which drops the
    /// alpha plane). Other layouts and premultiplied alpha must be converted first (``WebPPixels/importable(_:)``).
    convenience init(pixels: PixelBuffer, hasAlpha: Bool, useARGB: Bool) throws(ImageError) {
        precondition(
            pixels.layout == .rgb8 || (pixels.layout == .rgba8 && pixels.alphaMode != .premultiplied),
            "WebPPictureHandle: pixels libwebp cannot import")
        try self.init(width: pixels.width, height: pixels.height, useARGB: useARGB)
        let stride = Int32(pixels.bytesPerRow)
        let imported = pixels.withUnsafeBytes { (source: UnsafeBufferPointer<UInt8>) -> Int32 in
            let base = source.baseAddress
            return switch (pixels.layout, hasAlpha) {
            case (.rgb8, _): WebPPictureImportRGB(picture, base, stride)
            case (_, true): WebPPictureImportRGBA(picture, base, stride)
            default: WebPPictureImportRGBX(picture, base, stride)
            }
        }
        guard imported != 0 else { throw WebPErrors.encode(picture.pointee.error_code, "cannot import pixels") }
    }

    private init(width: Int, height: Int, useARGB: Bool) throws(ImageError) {
        picture = .allocate(capacity: 1)
        picture.initialize(to: WebPPicture())
        guard WebPPictureInit(picture) != 0 else {
            throw WebPErrors.encode(VP8_ENC_ERROR_INVALID_CONFIGURATION, "libwebp version mismatch")
        }
        picture.pointee.width = Int32(width)
        picture.pointee.height = Int32(height)
        picture.pointee.use_argb = useARGB ? 1 : 0
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

    /// The ARGB plane as straight RGBA in pooled storage (requires `use_argb`).
    func rgbaPixels() throws(ImageError) -> PixelBuffer {
        let width = Int(picture.pointee.width)
        let height = Int(picture.pointee.height)
        let stride = Int(picture.pointee.argb_stride)
        let argb = picture.pointee.argb
        return try PixelBuffer(validatingWidth: width, height: height, layout: .rgba8, alphaMode: .straight) { dst in
            guard let argb else { return dst.update(repeating: 0) }
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
    }
}

enum WebPPixels {
    /// Pixels libwebp imports as they are (RGB, or straight RGBA with any row padding: `buffer` itself, no copy) or,
    /// for other layouts and premultiplied alpha, straight RGBA in pooled storage; and whether any pixel is not
    /// opaque.
    static func importable(_ buffer: PixelBuffer) -> (pixels: PixelBuffer, hasAlpha: Bool) {
        let pixels =
            buffer.layout == .rgb8 || (buffer.layout == .rgba8 && buffer.alphaMode != .premultiplied)
            ? buffer : buffer.straightRGBA()
        guard buffer.layout.hasAlpha else { return (pixels, false) }
        let hasAlpha = pixels.withUnsafeBytes { (bytes: UnsafeBufferPointer<UInt8>) -> Bool in
            for y in 0..<pixels.height {
                var index = y * pixels.bytesPerRow + 3
                let end = y * pixels.bytesPerRow + pixels.width * 4
                while index < end {
                    if bytes[index] != 255 { return true }
                    index += 4
                }
            }
            return false
        }
        return (pixels, hasAlpha)
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
