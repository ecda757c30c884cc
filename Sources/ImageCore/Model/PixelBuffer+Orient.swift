extension PixelBuffer {
    /// These pixels turned per `orientation` (width and height swap for orientations 5-8), so an image stored
    /// with an EXIF-style orientation (JPEG's tag, AVIF's `irot`/`imir`) shows upright.
    ///
    /// A pure function; `.up` returns the buffer itself.
    public func oriented(_ orientation: ImageOrientation) -> PixelBuffer {
        if orientation == .up { return self }
        let w = width
        let h = height
        let bpp = layout.bytesPerPixel
        let bpr = bytesPerRow
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
        return PixelBuffer(width: outWidth, height: outHeight, layout: layout, alphaMode: alphaMode) { out in
            self.withUnsafeBytes { src in
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
        }
    }
}
