import ImageCore

/// Exact pixel permutations (flips, quarter turns) that copy whole pixels without touching their values.
///
/// The loops are generic over a `BitwiseCopyable` word of the pixel's size, so each layout gets a tight copy loop
/// with unaligned loads and stores. Quarter turns walk the source in 64×64 tiles so reads and writes both stay in
/// cache for large images.
enum PixelPermutation {
    /// The permutations supported.
    enum Kind {
        case flipHorizontal, flipVertical, rotate90, rotate180, rotate270
    }

    /// Applies `kind` to `pixels`; the result is tightly packed with the same layout and alpha mode.
    static func apply(_ kind: Kind, to pixels: PixelBuffer) -> PixelBuffer {
        switch pixels.layout.bytesPerPixel {
        case 1: apply(kind, to: pixels, word: UInt8.self)
        case 2: apply(kind, to: pixels, word: UInt16.self)
        case 3: apply(kind, to: pixels, word: (UInt8, UInt8, UInt8).self)
        default: apply(kind, to: pixels, word: UInt32.self)
        }
    }

    private static func apply<W: BitwiseCopyable>(_ kind: Kind, to pixels: PixelBuffer, word: W.Type) -> PixelBuffer {
        let w = pixels.width
        let h = pixels.height
        let swaps = kind == .rotate90 || kind == .rotate270
        let outW = swaps ? h : w
        let outH = swaps ? w : h
        let bpp = MemoryLayout<W>.size
        let srcRow = pixels.bytesPerRow
        let dstRow = outW * bpp
        return pixels.withUnsafeBytes { typed in
            let src = UnsafeRawPointer(typed.baseAddress!)
            return PixelStorage.make(
                width: outW, height: outH, layout: pixels.layout, alphaMode: pixels.alphaMode
            ) { out in
                let dst = UnsafeMutableRawPointer(out)
                @inline(__always) func copy(_ sx: Int, _ sy: Int, _ dx: Int, _ dy: Int) {
                    let value = src.loadUnaligned(fromByteOffset: sy * srcRow + sx * bpp, as: W.self)
                    dst.storeBytes(of: value, toByteOffset: dy * dstRow + dx * bpp, as: W.self)
                }
                switch kind {
                case .flipVertical:
                    for y in 0..<h {
                        (dst + y * dstRow).copyMemory(from: src + (h - 1 - y) * srcRow, byteCount: dstRow)
                    }
                case .flipHorizontal, .rotate180:
                    Parallel.forEachStripe(count: h, costPerItem: w) { rows in
                        for y in rows {
                            let sy = kind == .rotate180 ? h - 1 - y : y
                            for x in 0..<w { copy(w - 1 - x, sy, x, y) }
                        }
                    }
                case .rotate90, .rotate270:
                    // Output row y is source column y (90°: read bottom-up; 270°: source column w-1-y, top-down).
                    let tile = 64
                    let tileRows = (outH + tile - 1) / tile
                    Parallel.forEachStripe(count: tileRows, costPerItem: tile * outW) { tiles in
                        for ty in tiles {
                            let y0 = ty * tile
                            let y1 = min(y0 + tile, outH)
                            var x0 = 0
                            while x0 < outW {
                                let x1 = min(x0 + tile, outW)
                                for y in y0..<y1 {
                                    if kind == .rotate90 {
                                        for x in x0..<x1 { copy(y, h - 1 - x, x, y) }
                                    } else {
                                        for x in x0..<x1 { copy(w - 1 - y, x, x, y) }
                                    }
                                }
                                x0 = x1
                            }
                        }
                    }
                }
            }
        }
    }
}
