import ImageCore

/// Rotates and flips pixels so an image stored with an EXIF orientation shows upright.
///
/// Thread-safe: a pure function.
enum PixelOrienter {
    /// Returns `source` turned per `orientation` (width and height swap for orientations 5-8).
    static func apply(_ orientation: ImageOrientation, to source: PixelBuffer) -> PixelBuffer {
        if orientation == .up { return source }
        let w = source.width
        let h = source.height
        let bpp = source.layout.bytesPerPixel
        let bpr = source.bytesPerRow
        // Source byte offset of output pixel (x', y') is base + x' * stepX + y' * stepY.
        let (base, stepX, stepY): (Int, Int, Int)
        switch orientation {
        case .up: (base, stepX, stepY) = (0, bpp, bpr)
        case .upMirrored: (base, stepX, stepY) = ((w - 1) * bpp, -bpp, bpr)
        case .down: (base, stepX, stepY) = ((h - 1) * bpr + (w - 1) * bpp, -bpp, -bpr)
        case .downMirrored: (base, stepX, stepY) = ((h - 1) * bpr, bpp, -bpr)
        case .leftMirrored: (base, stepX, stepY) = (0, bpr, bpp)
        case .right: (base, stepX, stepY) = ((h - 1) * bpr, -bpr, bpp)
        case .rightMirrored: (base, stepX, stepY) = ((h - 1) * bpr + (w - 1) * bpp, -bpr, -bpp)
        case .left: (base, stepX, stepY) = ((w - 1) * bpp, bpr, -bpp)
        }
        let outWidth = orientation.swapsDimensions ? h : w
        let outHeight = orientation.swapsDimensions ? w : h
        let outRow = outWidth * bpp
        let bytes = [UInt8](unsafeUninitializedCapacity: outRow * outHeight) { out, initialized in
            source.bytes.withUnsafeBufferPointer { src in
                for y in 0..<outHeight {
                    var s = base + y * stepY
                    var d = y * outRow
                    for _ in 0..<outWidth {
                        for c in 0..<bpp { out[d + c] = src[s + c] }
                        s += stepX
                        d += bpp
                    }
                }
            }
            initialized = outRow * outHeight
        }
        return PixelBuffer(
            width: outWidth, height: outHeight, layout: source.layout, alphaMode: source.alphaMode, bytes: bytes)
    }
}
