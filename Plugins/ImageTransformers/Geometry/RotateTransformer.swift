import Foundation
import ImageCore

/// Rotates an image clockwise by an angle in degrees.
///
/// Multiples of 90° are exact pixel permutations (90° and 270° swap width and height; layout kept; `fitSize` is
/// irrelevant). Any other angle samples the source bilinearly in premultiplied alpha; area outside the source
/// becomes transparent, and edges are anti-aliased by blending with that transparency. With `fitSize` the
/// canvas grows to the rotated image's bounding box (nothing is cut off); without it the canvas keeps the
/// source size and the corners are cut. Arbitrary angles introduce alpha: RGB becomes RGBA, gray becomes
/// gray + alpha (straight alpha, or premultiplied when the source was).
///
/// The angle is normalised to `0 ..< 360` and rounded to 0.01° (the key's precision). Every frame of an animated
/// image is rotated. Thread-safe. Errors: ``/ImageCore/ImageError`` `transformFailed` for a non-finite angle,
/// `imageTooLarge` for a result beyond 2^28 pixels.
///
/// Key: `rotate(<degrees, 2 decimals>)` for right angles, `rotate(<degrees>,fit)` or `rotate(<degrees>,crop)`
/// otherwise, e.g. `rotate(90.00)`, `rotate(30.00,fit)`.
public struct RotateTransformer: Transformer {
    /// Clockwise angle in degrees, normalised to `0 ..< 360` and rounded to 0.01.
    public let angle: Double
    /// Whether the canvas grows to hold the whole rotated image (ignored for multiples of 90°).
    public let fitSize: Bool

    /// Creates a clockwise rotation by `angle` degrees (negative values rotate counter-clockwise).
    public init(angle: Double, fitSize: Bool = true) {
        var normalized = angle.truncatingRemainder(dividingBy: 360)
        if normalized < 0 { normalized += 360 }
        normalized = KeyFormat.quantize(normalized, decimals: 2)
        self.angle = normalized >= 360 ? 0 : normalized
        self.fitSize = fitSize
    }

    /// The number of clockwise quarter turns when ``angle`` is a multiple of 90°, else nil.
    public var quarterTurns: Int? {
        guard angle.isFinite else { return nil }
        let hundredths = Int((angle * 100).rounded())
        return hundredths % 9000 == 0 ? hundredths / 9000 : nil
    }

    /// `rotate(<degrees>)` for right angles, else `rotate(<degrees>,fit|crop)`.
    public var transformerKey: String {
        let degrees = KeyFormat.fixed(angle, decimals: 2)
        if quarterTurns != nil { return "rotate(\(degrees))" }
        return "rotate(\(degrees),\(fitSize ? "fit" : "crop"))"
    }

    /// Rotates every frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        guard angle.isFinite else { throw PixelStorage.invalid("rotate: angle \(angle) is not finite") }
        return try FrameMapper.map(image) { try rotate($0) }
    }

    func rotate(_ pixels: PixelBuffer) throws -> PixelBuffer {
        switch quarterTurns {
        case 0: return pixels
        case 1: return PixelPermutation.apply(.rotate90, to: pixels)
        case 2: return PixelPermutation.apply(.rotate180, to: pixels)
        case 3: return PixelPermutation.apply(.rotate270, to: pixels)
        default: return try Self.rotateBilinear(pixels, degrees: angle, fitSize: fitSize)
        }
    }

    /// The general path: inverse-maps every output pixel centre into the source and samples bilinearly.
    static func rotateBilinear(_ pixels: PixelBuffer, degrees: Double, fitSize: Bool) throws -> PixelBuffer {
        let radians = degrees * Double.pi / 180
        let c = cos(radians)
        let s = sin(radians)
        let w = Double(pixels.width)
        let h = Double(pixels.height)
        var outW = pixels.width
        var outH = pixels.height
        if fitSize {
            // A hair below the exact extent so 45° of 100 px gives ceil(141.42…) and 90.00-ish angles no extra row.
            outW = max(1, Int((w * abs(c) + h * abs(s) - 1e-6).rounded(.up)))
            outH = max(1, Int((w * abs(s) + h * abs(c) - 1e-6).rounded(.up)))
        }
        try PixelStorage.validate(width: outW, height: outH, what: "rotate")
        let layout = pixels.layoutWithAlpha
        let alphaMode = pixels.alphaMode(for: layout)
        let outCodec = RowCodec(layout: layout, alphaMode: alphaMode)
        let sampler = BilinearSampler(pixels)
        // Source point of output pixel centre (x + ½, y + ½): rotate by -θ about the centres.
        let ocx = Double(outW) / 2
        let ocy = Double(outH) / 2
        return pixels.withUnsafeBytes { bytes in
            let src = bytes.baseAddress!
            return PixelStorage.make(width: outW, height: outH, layout: layout, alphaMode: alphaMode) { out in
                let rowBytes = outW * layout.bytesPerPixel
                Parallel.forEachStripe(count: outH, costPerItem: outW * 8) { rows in
                    let row = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: outW)
                    defer { row.deallocate() }
                    for y in rows {
                        let dy = Double(y) + 0.5 - ocy
                        for x in 0..<outW {
                            let dx = Double(x) + 0.5 - ocx
                            // Continuous source coordinates with pixel centres at integers.
                            let u = dx * c + dy * s + w / 2 - 0.5
                            let v = -dx * s + dy * c + h / 2 - 0.5
                            row[x] = sampler.sample(src, u, v)
                        }
                        outCodec.store(row, outW, out + y * rowBytes)
                    }
                }
            }
        }
    }
}

/// Bilinear sampling of a pixel buffer in premultiplied floats, transparent outside the buffer.
struct BilinearSampler {
    let width: Int
    let height: Int
    let bytesPerRow: Int
    let bytesPerPixel: Int
    let load: (UnsafePointer<UInt8>) -> SIMD4<Float>

    init(_ pixels: PixelBuffer) {
        width = pixels.width
        height = pixels.height
        bytesPerRow = pixels.bytesPerRow
        bytesPerPixel = pixels.layout.bytesPerPixel
        switch (pixels.layout, pixels.alphaMode) {
        case (.rgba8, .premultiplied): load = RGBAPremultipliedCodec.load
        case (.rgba8, _): load = RGBAStraightCodec.load
        case (.rgb8, _): load = RGBCodec.load
        case (.gray8, _): load = GrayCodec.load
        case (.grayAlpha8, .premultiplied): load = GrayAlphaPremultipliedCodec.load
        case (.grayAlpha8, _): load = GrayAlphaStraightCodec.load
        }
    }

    /// The pixel at integer (x, y), or transparent when outside.
    @inline(__always)
    func pixel(_ src: UnsafePointer<UInt8>, _ x: Int, _ y: Int) -> SIMD4<Float> {
        guard x >= 0, y >= 0, x < width, y < height else { return .zero }
        return load(src + y * bytesPerRow + x * bytesPerPixel)
    }

    /// Samples at continuous (u, v), pixel centres at integers.
    @inline(__always)
    func sample(_ src: UnsafePointer<UInt8>, _ u: Double, _ v: Double) -> SIMD4<Float> {
        guard u > -1, v > -1, u < Double(width), v < Double(height) else { return .zero }
        let x0 = Int(u.rounded(.down))
        let y0 = Int(v.rounded(.down))
        let fx = Float(u - Double(x0))
        let fy = Float(v - Double(y0))
        let top = pixel(src, x0, y0) * (1 - fx) + pixel(src, x0 + 1, y0) * fx
        let bottom = pixel(src, x0, y0 + 1) * (1 - fx) + pixel(src, x0 + 1, y0 + 1) * fx
        return top * (1 - fy) + bottom * fy
    }
}
