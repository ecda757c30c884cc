import ImageCore

/// Size arithmetic the GIF coder needs (GIF has no scaled decoding).
enum GIFPixels {

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
