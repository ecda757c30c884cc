extension PixelBuffer {
    /// Tightly packed straight-alpha RGBA of the buffer, whatever its layout, alpha mode and row padding, in pooled
    /// storage: the buffer itself when it already is that.
    ///
    /// What encoders that take RGBA want (giflib after quantization, libwebp).
    public func straightRGBA() -> PixelBuffer {
        if layout == .rgba8 && alphaMode != .premultiplied && bytesPerRow == width * 4 { return self }
        return PixelBuffer(width: width, height: height, layout: .rgba8, alphaMode: .straight) { out in
            writeStraightRGBA(into: out)
        }
    }

    /// Tightly packed straight-alpha RGBA of the buffer as an array (a copy; ``straightRGBA()`` avoids it).
    public func straightRGBABytes() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: width * height * 4) { out, initialized in
            writeStraightRGBA(into: out)
            initialized = width * height * 4
        }
    }

    private func writeStraightRGBA(into dst: UnsafeMutableBufferPointer<UInt8>) {
        let buffer = self
        let width = buffer.width
        let bpp = buffer.layout.bytesPerPixel
        buffer.withUnsafeBytes { src in
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
                        dst[d + 3] = 255
                    case .gray8:
                        dst[d] = src[s]
                        dst[d + 1] = src[s]
                        dst[d + 2] = src[s]
                        dst[d + 3] = 255
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
}

extension PixelBuffer {
    /// The first colour channel (and alpha) of an RGB(A) buffer whose three channels are equal, as gray (gray with
    /// alpha): what a monochrome AVIF or HEIF decodes to through an RGB conversion. Other layouts are returned as
    /// they are. Written into pooled storage; the source's row padding is skipped.
    package func grayFromEqualChannels() -> PixelBuffer {
        guard layout == .rgb8 || layout == .rgba8 else { return self }
        let alpha = layout == .rgba8
        let inStep = alpha ? 4 : 3
        let outStep = alpha ? 2 : 1
        let (width, height, sourceRow) = (self.width, self.height, bytesPerRow)
        return PixelBuffer(
            width: width, height: height, layout: alpha ? .grayAlpha8 : .gray8, alphaMode: alphaMode
        ) { (out: UnsafeMutableBufferPointer<UInt8>) in
            withUnsafeBytes { src in
                for y in 0..<height {
                    let from = y * sourceRow
                    let to = y * width * outStep
                    for x in 0..<width {
                        out[to + x * outStep] = src[from + x * inStep]
                        if alpha { out[to + x * outStep + 1] = src[from + x * inStep + 3] }
                    }
                }
            }
        }
    }
}
