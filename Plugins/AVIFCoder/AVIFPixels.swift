internal import CAVIF
import ImageCore

/// Converts a decoded `avifImage` (YUV or monochrome, 8 to 12 bits, optional alpha plane) to a ``PixelBuffer``.
///
/// libavif's `avifImageYUVToRGB` (libyuv where it applies) writes 8-bit RGB(A) straight into the buffer's bytes,
/// reducing 10- and 12-bit samples. Monochrome (4:0:0) images become `gray8` / `grayAlpha8`. When the file
/// stores premultiplied alpha, the pixels stay premultiplied and the buffer says so. Thread-safe: a pure
/// function of the image.
enum AVIFPixels {
    static func convert(_ image: UnsafeMutablePointer<avifImage>, hasAlpha: Bool) throws(ImageError) -> PixelBuffer {
        let width = Int(image.pointee.width)
        let height = Int(image.pointee.height)
        guard width > 0, height > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "decoded AVIF frame has size \(width)x\(height)")
        }
        let alpha = hasAlpha && image.pointee.alphaPlane != nil
        let premultiplied = alpha && image.pointee.alphaPremultiplied != AVIF_FALSE
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.depth = 8
        rgb.format = alpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
        rgb.alphaPremultiplied = premultiplied ? AVIF_TRUE : AVIF_FALSE
        let channels = alpha ? 4 : 3
        let rowBytes = width * channels
        rgb.rowBytes = UInt32(rowBytes)
        let mode: AlphaMode? = alpha ? (premultiplied ? .premultiplied : .straight) : nil
        // Straight into pooled storage: libavif writes every row or fails, and a failure makes no buffer.
        let pixels = try PixelBuffer(
            validatingWidth: width, height: height, layout: alpha ? .rgba8 : .rgb8, alphaMode: mode,
            bytesPerRow: rowBytes
        ) { (buffer) throws(ImageError) in
            rgb.pixels = buffer.baseAddress
            let status = avifImageYUVToRGB(image, &rgb)
            rgb.pixels = nil
            guard status == AVIF_RESULT_OK else {
                throw AVIFStatus.decode(status, diagnostics: "", "cannot convert the AVIF frame to RGB")
            }
        }
        return image.pointee.yuvFormat == AVIF_PIXEL_FORMAT_YUV400 ? pixels.grayFromEqualChannels() : pixels
    }

}
