import ImageCore

/// Builds test images pixel by pixel and reads them back.
enum Fixtures {
    /// A buffer whose pixel (x, y) is `pixel(x, y)` (as many bytes as the layout has channels).
    ///
    /// - Parameter padding: extra bytes at the end of each row, to exercise `bytesPerRow` handling.
    static func buffer(
        width: Int, height: Int, layout: PixelLayout = .rgba8, alphaMode: AlphaMode? = nil, padding: Int = 0,
        _ pixel: (Int, Int) -> [UInt8]
    ) -> PixelBuffer {
        let bpp = layout.bytesPerPixel
        let rowBytes = width * bpp + padding
        var bytes = [UInt8](repeating: 0xEE, count: rowBytes * height)
        for y in 0..<height {
            for x in 0..<width {
                let value = pixel(x, y)
                precondition(value.count == bpp)
                for c in 0..<bpp { bytes[y * rowBytes + x * bpp + c] = value[c] }
            }
        }
        return PixelBuffer(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: rowBytes, bytes: bytes)
    }

    /// A still image of `buffer`.
    static func image(_ buffer: PixelBuffer) -> Image { Image(pixels: buffer) }

    /// The channels of pixel (x, y).
    static func px(_ buffer: PixelBuffer, _ x: Int, _ y: Int) -> [UInt8] { Array(buffer.pixel(x: x, y: y)) }

    /// Every pixel as `[y][x] -> channels`.
    static func rows(_ buffer: PixelBuffer) -> [[[UInt8]]] {
        (0..<buffer.height).map { y in (0..<buffer.width).map { x in px(buffer, x, y) } }
    }

    /// A deterministic pseudo-random generator (SplitMix64), so failures reproduce.
    struct Random {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next() >> 56) }
    }

    /// An opaque RGBA image of uniform random noise: the hardest content for a resampler.
    static func randomOpaque(width: Int, height: Int, seed: UInt64) -> PixelBuffer {
        var random = Random(seed: seed)
        let noise = (0..<(width * height * 3)).map { _ in Int(random.byte()) }
        return buffer(width: width, height: height) { x, y in
            (0..<3).map { c in UInt8(noise[(y * width + x) * 3 + c]) } + [255]
        }
    }
}
