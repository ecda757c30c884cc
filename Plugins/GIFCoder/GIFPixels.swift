import ImageCore

/// Pixel conversions and the area-average resampler the GIF coder needs (GIF has no scaled decoding).
enum GIFPixels {
    /// Tightly packed straight-alpha RGBA of `buffer`, whatever its layout, alpha mode and row padding.
    static func straightRGBA(_ buffer: PixelBuffer) -> [UInt8] {
        let width = buffer.width
        var out = [UInt8](repeating: 255, count: width * buffer.height * 4)
        let bpp = buffer.layout.bytesPerPixel
        buffer.bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<buffer.height {
                    var s = y * buffer.bytesPerRow
                    var d = y * width * 4
                    for _ in 0..<width {
                        switch buffer.layout {
                        case .rgba8:
                            dst[d] = src[s]
                            dst[d + 1] = src[s + 1]
                            dst[d + 2] = src[s + 2]
                            dst[d + 3] = src[s + 3]
                        case .rgb8:
                            dst[d] = src[s]
                            dst[d + 1] = src[s + 1]
                            dst[d + 2] = src[s + 2]
                        case .gray8:
                            dst[d] = src[s]
                            dst[d + 1] = src[s]
                            dst[d + 2] = src[s]
                        case .grayAlpha8:
                            dst[d] = src[s]
                            dst[d + 1] = src[s]
                            dst[d + 2] = src[s]
                            dst[d + 3] = src[s + 1]
                        }
                        if buffer.alphaMode == .premultiplied {
                            let alpha = Int(dst[d + 3])
                            for c in 0..<3 {
                                dst[d + c] =
                                    alpha == 0 ? 0 : UInt8(min(255, (Int(dst[d + c]) * 255 + alpha / 2) / alpha))
                            }
                        }
                        s += bpp
                        d += 4
                    }
                }
            }
        }
        return out
    }

    /// The size that fits `width × height` inside `limit`, keeping the aspect ratio; never larger.
    static func fit(width: Int, height: Int, inside limit: PixelSize) -> PixelSize {
        guard limit.width > 0, limit.height > 0, width > limit.width || height > limit.height else {
            return PixelSize(width: width, height: height)
        }
        let scale = min(Double(limit.width) / Double(width), Double(limit.height) / Double(height))
        return PixelSize(
            width: max(1, Int((Double(width) * scale).rounded())),
            height: max(1, Int((Double(height) * scale).rounded())))
    }
}
