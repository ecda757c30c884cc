import ImageCore

/// Cuts a rectangle out of an image; the rectangle is clamped to the image bounds.
///
/// Coordinates are in pixels from the top-left corner. The part of the rectangle that lies outside the image is
/// dropped (so `crop(-10,-10,50,50)` of a large image yields its top-left 40×40). Keeps layout and alpha mode;
/// crops every frame. Errors: ``/ImageCore/ImageError`` `transformFailed` when the rectangle has no positive size or
/// misses the image entirely.
///
/// Key: `crop(<x>,<y>,<width>,<height>)` with the requested (unclamped) rectangle, e.g. `crop(10,10,100,100)`.
public struct CropTransformer: Transformer {
    /// Left edge in pixels.
    public let x: Int
    /// Top edge in pixels.
    public let y: Int
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int

    /// Creates a crop of the rectangle at (`x`, `y`) of `width × height` pixels.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// `crop(<x>,<y>,<width>,<height>)`.
    public var transformerKey: String { "crop(\(x),\(y),\(width),\(height))" }

    /// Crops every frame.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` when the clamped rectangle is empty.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        try FrameMapper.map(image) { try crop($0) }
    }

    /// The rectangle actually cut from an image of `size`: (x, y, width, height), or nil when empty.
    public func clampedRect(in size: PixelSize) -> (x: Int, y: Int, width: Int, height: Int)? {
        guard width > 0, height > 0 else { return nil }
        let (right, rightOverflow) = x.addingReportingOverflow(width)
        let (bottom, bottomOverflow) = y.addingReportingOverflow(height)
        let x0 = max(0, x)
        let y0 = max(0, y)
        let x1 = rightOverflow ? size.width : min(size.width, right)
        let y1 = bottomOverflow ? size.height : min(size.height, bottom)
        guard x1 > x0, y1 > y0 else { return nil }
        return (x0, y0, x1 - x0, y1 - y0)
    }

    func crop(_ pixels: PixelBuffer) throws -> PixelBuffer {
        guard let rect = clampedRect(in: PixelSize(width: pixels.width, height: pixels.height)) else {
            throw PixelStorage.invalid(
                "crop: rectangle \(x),\(y) \(width)x\(height) does not intersect the \(pixels.width)x\(pixels.height) image"
            )
        }
        if rect.width == pixels.width && rect.height == pixels.height { return pixels }
        let bpp = pixels.layout.bytesPerPixel
        let rowBytes = rect.width * bpp
        return pixels.withUnsafeBytes { typed in
            let src = UnsafeRawPointer(typed.baseAddress!)
            return PixelStorage.make(
                width: rect.width, height: rect.height, layout: pixels.layout, alphaMode: pixels.alphaMode
            ) { out in
                for row in 0..<rect.height {
                    let from = src + (rect.y + row) * pixels.bytesPerRow + rect.x * bpp
                    UnsafeMutableRawPointer(out + row * rowBytes).copyMemory(from: from, byteCount: rowBytes)
                }
            }
        }
    }
}
