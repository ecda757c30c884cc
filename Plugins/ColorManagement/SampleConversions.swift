import ImageCore

/// Alpha and depth conversions around the lcms2 transforms (lcms2 converts colour, never un-premultiplies).
enum Premultiplication {
    /// Straight-alpha copy of premultiplied 8-bit pixels (colour of fully transparent pixels becomes 0).
    static func straightened(_ pixels: PixelBuffer) -> PixelBuffer {
        let bpp = pixels.layout.bytesPerPixel
        let rowBytes = pixels.width * bpp
        var bytes = [UInt8](repeating: 0, count: rowBytes * pixels.height)
        pixels.withUnsafeBytes { src in
            bytes.withUnsafeMutableBufferPointer { dst in
                for y in 0..<pixels.height {
                    for x in 0..<pixels.width {
                        let s = y * pixels.bytesPerRow + x * bpp
                        let d = y * rowBytes + x * bpp
                        let alpha = Int(src[s + bpp - 1])
                        for c in 0..<bpp - 1 {
                            dst[d + c] = alpha == 0 ? 0 : UInt8(min(255, (Int(src[s + c]) * 255 + alpha / 2) / alpha))
                        }
                        dst[d + bpp - 1] = UInt8(alpha)
                    }
                }
            }
        }
        return PixelBuffer(
            width: pixels.width, height: pixels.height, layout: pixels.layout, alphaMode: .straight, bytes: bytes)
    }

    /// Straight-alpha copy of premultiplied 16-bit RGB(A) or gray(A) samples.
    static func straightened(_ samples: ColorSamples) -> ColorSamples {
        guard samples.hasAlpha, samples.bitsPerSample == 16 else { return samples }
        let channels = samples.model.channelCount + 1
        let rowBytes = samples.width * channels * 2
        var bytes = [UInt8](repeating: 0, count: rowBytes * samples.height)
        samples.bytes.withUnsafeBytes { raw in
            bytes.withUnsafeMutableBytes { out in
                for y in 0..<samples.height {
                    let src = raw.baseAddress!.advanced(by: y * samples.bytesPerRow)
                    let dst = out.baseAddress!.advanced(by: y * rowBytes).assumingMemoryBound(to: UInt16.self)
                    for x in 0..<samples.width {
                        let base = x * channels
                        let alpha = Int(src.loadUnaligned(fromByteOffset: (base + channels - 1) * 2, as: UInt16.self))
                        for c in 0..<channels - 1 {
                            let value = Int(src.loadUnaligned(fromByteOffset: (base + c) * 2, as: UInt16.self))
                            dst[base + c] = alpha == 0 ? 0 : UInt16(min(65535, (value * 65535 + alpha / 2) / alpha))
                        }
                        dst[base + channels - 1] = UInt16(alpha)
                    }
                }
            }
        }
        // The geometry was validated when `samples` was made; the copy is tightly packed.
        return
            (try? ColorSamples(
                width: samples.width, height: samples.height, model: samples.model, bitsPerSample: 16,
                hasAlpha: true, alphaMode: .straight, bytes: bytes)) ?? samples
    }

    /// 16-bit (or 8-bit) RGB/gray samples reduced to 8-bit `layout` with rounding, colour unchanged.
    static func reduced(_ samples: ColorSamples, layout: PixelLayout) -> PixelBuffer {
        let channels = layout.bytesPerPixel
        let rowBytes = samples.width * channels
        var bytes = [UInt8](repeating: 0, count: rowBytes * samples.height)
        samples.bytes.withUnsafeBytes { raw in
            for y in 0..<samples.height {
                let src = raw.baseAddress!.advanced(by: y * samples.bytesPerRow)
                for i in 0..<samples.width * channels {
                    bytes[y * rowBytes + i] =
                        samples.bitsPerSample == 16
                        ? UInt8((Int(src.loadUnaligned(fromByteOffset: i * 2, as: UInt16.self)) * 255 + 32767) / 65535)
                        : src.load(fromByteOffset: i, as: UInt8.self)
                }
            }
        }
        return PixelBuffer(
            width: samples.width, height: samples.height, layout: layout,
            alphaMode: layout.hasAlpha ? samples.alphaMode : nil, bytes: bytes)
    }
}

/// CMYK without a profile: the naive formula browsers use for untagged CMYK, `R = (1 − C)(1 − K)`.
enum NaiveCMYK {
    static func convert(_ samples: ColorSamples) -> PixelBuffer {
        let wide = samples.bitsPerSample == 16
        let rowBytes = samples.width * 3
        var bytes = [UInt8](repeating: 0, count: rowBytes * samples.height)
        samples.bytes.withUnsafeBytes { raw in
            for y in 0..<samples.height {
                let src = raw.baseAddress!.advanced(by: y * samples.bytesPerRow)
                for x in 0..<samples.width {
                    // Each ink as "1 − ink" in 0...255 (the inverted, Adobe form).
                    var remaining = [Int](repeating: 0, count: 4)
                    for c in 0..<4 {
                        let value =
                            wide
                            ? (Int(src.loadUnaligned(fromByteOffset: (x * 4 + c) * 2, as: UInt16.self)) * 255 + 32767)
                                / 65535
                            : Int(src.load(fromByteOffset: x * 4 + c, as: UInt8.self))
                        remaining[c] = samples.isInverted ? value : 255 - value
                    }
                    for c in 0..<3 {
                        bytes[y * rowBytes + x * 3 + c] = UInt8((remaining[c] * remaining[3] + 127) / 255)
                    }
                }
            }
        }
        return PixelBuffer(width: samples.width, height: samples.height, layout: .rgb8, bytes: bytes)
    }
}
