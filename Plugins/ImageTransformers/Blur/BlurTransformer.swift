import ImageCore

/// Gaussian blur of a given standard deviation, fast at any radius.
///
/// Implemented as three passes of an extended box blur per axis (`BoxBlurKernel`), whose combined variance
/// equals σ² exactly; each pass uses running sums, so the cost per pixel does not depend on the radius. The blur
/// runs in premultiplied alpha (no dark fringes at transparent edges) and extends edge pixels, so a constant image
/// stays constant. Rows are blurred first (parallel stripes of rows) into a 16-bit fixed-point premultiplied
/// intermediate (8 fractional bits, 8 bytes per pixel), then columns in parallel strips of 32.
///
/// `radius` is the Gaussian's standard deviation σ in pixels (the meaning of Pillow's `GaussianBlur(radius)` and
/// Core Image's `inputRadius`), rounded to 0.01 and limited to 10 000; 0 returns the image unchanged (still
/// marked transformed). Layout and alpha mode are kept. Every frame is blurred. Thread-safe. Errors:
/// ``/ImageCore/ImageError`` `transformFailed` for a negative or non-finite radius.
///
/// Key: `blur(r=<σ, 2 decimals>)`, e.g. `blur(r=4.00)`.
public struct BlurTransformer: Transformer {
    /// Standard deviation of the Gaussian in pixels.
    public let radius: Double

    /// Passes of the box blur per axis.
    static let passes = 3
    /// Columns blurred together in the vertical pass.
    static let stripWidth = 32

    /// Creates a blur with standard deviation `radius` pixels.
    public init(radius: Double) {
        self.radius = radius.isFinite ? KeyFormat.quantize(min(radius, 10_000), decimals: 2) : radius
    }

    /// `blur(r=<radius>)`.
    public var transformerKey: String { "blur(r=\(KeyFormat.fixed(radius, decimals: 2)))" }

    /// Blurs every frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        guard radius.isFinite, radius >= 0 else {
            throw PixelStorage.invalid("blur: radius \(radius) must be finite and ≥ 0")
        }
        return try FrameMapper.map(image) { blur($0) }
    }

    func blur(_ pixels: PixelBuffer) -> PixelBuffer {
        let w = pixels.width
        let h = pixels.height
        guard radius > 0, w > 0, h > 0 else { return pixels }
        let kernel = BoxBlurKernel(sigma: radius, passes: Self.passes)
        let codec = RowCodec(pixels)
        // Row pass: bytes → premultiplied floats → 3 box passes → UInt16 fixed point (value × 256).
        let intermediate = [UInt16](unsafeUninitializedCapacity: w * h * 4) { buffer, initialized in
            let mid = buffer.baseAddress!
            pixels.withUnsafeBytes { bytes in
                let src = bytes.baseAddress!
                Parallel.forEachStripe(count: h, costPerItem: w * 4) { rows in
                    let a = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: w)
                    let b = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: w)
                    let sums = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: 1)
                    defer {
                        a.deallocate()
                        b.deallocate()
                        sums.deallocate()
                    }
                    for y in rows {
                        codec.load(src + y * pixels.bytesPerRow, w, a)
                        Self.threePasses(kernel, a, b, count: w, lanes: 1, sums: sums)
                        let dst = mid + y * w * 4
                        for x in 0..<w {
                            let v = b[x] * 256 + 0.5
                            for lane in 0..<4 {
                                let c = v[lane]
                                dst[x * 4 + lane] = UInt16(c > 0 ? (c < 65535 ? c : 65535) : 0)
                            }
                        }
                    }
                }
            }
            initialized = w * h * 4
        }
        // Column pass on strips of columns: every row of a strip is contiguous, so the running sums of all its
        // columns advance together.
        let strip = Self.stripWidth
        let strips = (w + strip - 1) / strip
        return intermediate.withUnsafeBufferPointer { midBuffer in
            let mid = midBuffer.baseAddress!
            return PixelStorage.make(width: w, height: h, layout: pixels.layout, alphaMode: pixels.alphaMode) { out in
                let rowBytes = w * pixels.layout.bytesPerPixel
                let bpp = pixels.layout.bytesPerPixel
                Parallel.forEachStripe(count: strips, costPerItem: strip * h * 4) { range in
                    let a = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: h * strip)
                    let b = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: h * strip)
                    let sums = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: strip)
                    defer {
                        a.deallocate()
                        b.deallocate()
                        sums.deallocate()
                    }
                    for s in range {
                        let x0 = s * strip
                        let lanes = min(strip, w - x0)
                        let scale: Float = 1 / 256
                        for y in 0..<h {
                            let from = mid + (y * w + x0) * 4
                            let to = a + y * lanes
                            for i in 0..<lanes {
                                let p = from + i * 4
                                to[i] = SIMD4(Float(p[0]), Float(p[1]), Float(p[2]), Float(p[3])) * scale
                            }
                        }
                        Self.threePasses(kernel, a, b, count: h, lanes: lanes, sums: sums)
                        for y in 0..<h {
                            codec.store(b + y * lanes, lanes, out + y * rowBytes + x0 * bpp)
                        }
                    }
                }
            }
        }
    }

    /// Runs the three box passes a → b → a → b.
    @inline(__always)
    private static func threePasses(
        _ kernel: BoxBlurKernel, _ a: UnsafeMutablePointer<SIMD4<Float>>, _ b: UnsafeMutablePointer<SIMD4<Float>>,
        count: Int, lanes: Int, sums: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        kernel.pass(a, b, count: count, lanes: lanes, sums: sums)
        kernel.pass(b, a, count: count, lanes: lanes, sums: sums)
        kernel.pass(a, b, count: count, lanes: lanes, sums: sums)
    }
}
