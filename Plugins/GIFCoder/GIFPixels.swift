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

    /// Area-average (box) resampling of straight RGBA, weighting colour by alpha so edges do not darken.
    static func resample(_ rgba: [UInt8], width: Int, height: Int, to target: PixelSize) -> [UInt8] {
        if target.width == width && target.height == height { return rgba }
        let xTaps = taps(source: width, target: target.width)
        let yTaps = taps(source: height, target: target.height)
        // Horizontal pass into premultiplied floats, then vertical pass.
        var horizontal = [Float](repeating: 0, count: target.width * height * 4)
        rgba.withUnsafeBufferPointer { src in
            horizontal.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    for (x, list) in xTaps.enumerated() {
                        var acc: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        for (sx, weight) in list {
                            let s = (y * width + sx) * 4
                            let a = Float(src[s + 3]) * weight
                            acc.0 += Float(src[s]) * a
                            acc.1 += Float(src[s + 1]) * a
                            acc.2 += Float(src[s + 2]) * a
                            acc.3 += a
                        }
                        let d = (y * target.width + x) * 4
                        dst[d] = acc.0
                        dst[d + 1] = acc.1
                        dst[d + 2] = acc.2
                        dst[d + 3] = acc.3
                    }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: target.width * target.height * 4)
        horizontal.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for (y, list) in yTaps.enumerated() {
                    for x in 0..<target.width {
                        var acc: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        for (sy, weight) in list {
                            let s = (sy * target.width + x) * 4
                            acc.0 += src[s] * weight
                            acc.1 += src[s + 1] * weight
                            acc.2 += src[s + 2] * weight
                            acc.3 += src[s + 3] * weight
                        }
                        let d = (y * target.width + x) * 4
                        guard acc.3 > 0 else { continue }
                        dst[d] = UInt8(min(255, max(0, (acc.0 / acc.3).rounded())))
                        dst[d + 1] = UInt8(min(255, max(0, (acc.1 / acc.3).rounded())))
                        dst[d + 2] = UInt8(min(255, max(0, (acc.2 / acc.3).rounded())))
                        dst[d + 3] = UInt8(min(255, max(0, acc.3.rounded())))
                    }
                }
            }
        }
        return out
    }

    /// For each target index, the source indices it covers and their coverage weights (summing to 1).
    private static func taps(source: Int, target: Int) -> [[(Int, Float)]] {
        let scale = Double(source) / Double(target)
        return (0..<target).map { t in
            let start = Double(t) * scale
            let end = min(Double(source), start + scale)
            var list: [(Int, Float)] = []
            var s = Int(start)
            while Double(s) < end && s < source {
                let overlap = min(end, Double(s + 1)) - max(start, Double(s))
                if overlap > 0 { list.append((s, Float(overlap / scale))) }
                s += 1
            }
            return list
        }
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
