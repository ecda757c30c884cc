import ImageCore

/// Blends every pixel's colour towards a tint colour, keeping its alpha.
///
/// `result.rgb = rgb · (1 − f) + tint.rgb · f` with `f = amount × tint.alpha / 255`, computed in premultiplied
/// alpha so transparent pixels stay transparent; alpha is unchanged. Gray images stay gray when the tint is gray;
/// a coloured tint turns gray into RGB (gray + alpha into RGBA). Every frame is tinted. Thread-safe. Errors:
/// ``/ImageCore/ImageError`` `transformFailed` when `amount` is not finite.
///
/// `amount` is clamped to 0…1 and rounded to 0.001. Key: `tint(<#RRGGBBAA>,<amount, 3 decimals>)`, e.g.
/// `tint(#FF000080,0.500)`.
public struct TintTransformer: Transformer {
    /// The tint colour; its alpha scales the blend.
    public let color: RGBAColor
    /// Blend amount, 0 (unchanged) … 1 (fully the tint colour, times its alpha).
    public let amount: Double

    /// Creates a tint; `amount` defaults to a full blend.
    public init(color: RGBAColor, amount: Double = 1) {
        self.color = color
        self.amount = amount.isNaN ? amount : KeyFormat.quantize(min(1, max(0, amount)), decimals: 3)
    }

    /// `tint(<#RRGGBBAA>,<amount>)`.
    public var transformerKey: String { "tint(\(color.keyDescription),\(KeyFormat.fixed(amount, decimals: 3)))" }

    /// Tints every frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        guard amount.isFinite else { throw PixelStorage.invalid("tint: amount \(amount) is not finite") }
        return try FrameMapper.map(image) { tint($0) }
    }

    func tint(_ pixels: PixelBuffer) -> PixelBuffer {
        let w = pixels.width
        let h = pixels.height
        guard w > 0, h > 0 else { return pixels }
        var layout = pixels.layout
        if !color.isGray {
            if layout == .gray8 { layout = .rgb8 }
            if layout == .grayAlpha8 { layout = .rgba8 }
        }
        let alphaMode = pixels.alphaMode(for: layout)
        let inCodec = RowCodec(pixels)
        let outCodec = RowCodec(layout: layout, alphaMode: alphaMode)
        let f = Float(amount) * Float(color.alpha) / 255
        let keep = 1 - f
        // Tint colour per unit of alpha: premultiplied contribution is tint · (a / 255) · f.
        let paint = SIMD4<Float>(Float(color.red), Float(color.green), Float(color.blue), 0) * (f / 255)
        return pixels.withUnsafeBytes { bytes in
            let src = bytes.baseAddress!
            return PixelStorage.make(width: w, height: h, layout: layout, alphaMode: alphaMode) { out in
                let rowBytes = w * layout.bytesPerPixel
                Parallel.forEachStripe(count: h, costPerItem: w) { rows in
                    let row = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: w)
                    defer { row.deallocate() }
                    for y in rows {
                        inCodec.load(src + y * pixels.bytesPerRow, w, row)
                        for x in 0..<w {
                            let p = row[x]
                            var blended = p * keep + paint * p[3]
                            blended[3] = p[3]
                            row[x] = blended
                        }
                        outCodec.store(row, w, out + y * rowBytes)
                    }
                }
            }
        }
    }
}
