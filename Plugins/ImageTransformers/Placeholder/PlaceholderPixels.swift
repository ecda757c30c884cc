import ImageCore

/// The one place the placeholder hashes read pixels: the first frame reduced (area average, ImageCore's reducer) to
/// fit a small box, as tightly packed straight RGBA.
///
/// Hashing a small reduction is what the reference implementations ask for (ThumbHash takes at most 100×100) and what
/// keeps the cost per image low: the hashes' work grows with the pixels they read.
struct PlaceholderPixels {
    let width: Int
    let height: Int
    /// Straight RGBA, `width × height × 4` bytes.
    let rgba: [UInt8]

    /// `pixels` as they are (no reduction).
    init(_ pixels: PixelBuffer) {
        width = pixels.width
        height = pixels.height
        rgba = pixels.straightRGBABytes()
    }

    /// `image`'s first frame fitted inside `maxSide × maxSide` (aspect ratio kept, never enlarged).
    init(_ image: Image, maxSide: Int) throws(ImageError) {
        let pixels = image.pixels
        guard pixels.width > 0, pixels.height > 0 else {
            throw ImageError(.transformFailed, stage: .transform, message: "placeholder of an empty image")
        }
        let size = Self.fitted(width: pixels.width, height: pixels.height, maxSide: maxSide)
        self.init(
            size.width == pixels.width && size.height == pixels.height
                ? pixels : pixels.areaResampled(width: size.width, height: size.height))
    }

    /// The size of `width × height` fitted inside a square of `maxSide` (at least 1 × 1), never enlarged.
    static func fitted(width: Int, height: Int, maxSide: Int) -> PixelSize {
        let side = max(1, maxSide)
        guard width > side || height > side else { return PixelSize(width: width, height: height) }
        let scale = Double(side) / Double(max(width, height))
        return PixelSize(
            width: min(side, max(1, Int((Double(width) * scale).rounded()))),
            height: min(side, max(1, Int((Double(height) * scale).rounded()))))
    }
}
