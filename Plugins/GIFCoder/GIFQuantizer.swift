/// One frame reduced to a palette: what a GIF image block stores.
struct GIFIndexedFrame {
    /// RGB triples; at most 256 entries including the transparent one.
    var palette: [UInt8]
    /// One palette index per pixel, row-major.
    var indices: [UInt8]
    /// The index of the transparent entry (the last one), or nil when every pixel is opaque.
    var transparentIndex: Int?
    /// Number of palette entries used (`palette.count / 3`).
    var colorCount: Int { palette.count / 3 }
}

/// Reduces straight RGBA pixels to at most 256 palette entries.
///
/// Alpha is binary in GIF: alpha below 128 maps to one transparent entry. When the opaque colours fit in the
/// palette they are kept exactly (so ≤ 256-colour images round-trip losslessly); otherwise a histogram of
/// 15-bit colour cells is split by median cut (boxes split along their widest channel at the pixel-weighted
/// median) and every cell maps to its nearest palette colour. No dithering.
enum GIFQuantizer {
    static func quantize(_ rgba: [UInt8]) -> GIFIndexedFrame {
        let pixelCount = rgba.count / 4
        var hasTransparent = false
        for i in 0..<pixelCount where rgba[i * 4 + 3] < 128 {
            hasTransparent = true
            break
        }
        let maxColors = hasTransparent ? 255 : 256
        if let exact = exactPalette(rgba, maxColors: maxColors, hasTransparent: hasTransparent) { return exact }
        return medianCut(rgba, maxColors: maxColors, hasTransparent: hasTransparent)
    }

    /// The lossless path: nil as soon as there are more than `maxColors` distinct opaque colours.
    private static func exactPalette(_ rgba: [UInt8], maxColors: Int, hasTransparent: Bool) -> GIFIndexedFrame? {
        var lookup: [UInt32: UInt8] = [:]
        var palette: [UInt8] = []
        var indices = [UInt8](repeating: 0, count: rgba.count / 4)
        let transparent = UInt8(truncatingIfNeeded: hasTransparent ? 255 : 0)
        var transparentUsed = false
        for i in 0..<indices.count {
            let p = i * 4
            if rgba[p + 3] < 128 {
                transparentUsed = true
                indices[i] = transparent  // patched to the real index below
                continue
            }
            let key = UInt32(rgba[p]) << 16 | UInt32(rgba[p + 1]) << 8 | UInt32(rgba[p + 2])
            if let index = lookup[key] {
                indices[i] = index
            } else {
                guard lookup.count < maxColors else { return nil }
                let index = UInt8(lookup.count)
                lookup[key] = index
                palette += [rgba[p], rgba[p + 1], rgba[p + 2]]
                indices[i] = index
            }
        }
        guard transparentUsed else { return GIFIndexedFrame(palette: palette, indices: indices, transparentIndex: nil) }
        let tIndex = palette.count / 3
        for i in 0..<indices.count where rgba[i * 4 + 3] < 128 { indices[i] = UInt8(tIndex) }
        palette += [0, 0, 0]
        return GIFIndexedFrame(palette: palette, indices: indices, transparentIndex: tIndex)
    }

    private struct Cell {
        var key: Int
        var count: Int
        var sum: (r: Int, g: Int, b: Int)
        var mean: (r: Int, g: Int, b: Int) { (sum.r / count, sum.g / count, sum.b / count) }
    }

    private static func medianCut(_ rgba: [UInt8], maxColors: Int, hasTransparent: Bool) -> GIFIndexedFrame {
        let pixelCount = rgba.count / 4
        var cells = [Cell](repeating: Cell(key: 0, count: 0, sum: (0, 0, 0)), count: 1 << 15)
        for i in 0..<pixelCount where rgba[i * 4 + 3] >= 128 {
            let r = Int(rgba[i * 4]), g = Int(rgba[i * 4 + 1]), b = Int(rgba[i * 4 + 2])
            let key = (r >> 3) << 10 | (g >> 3) << 5 | b >> 3
            cells[key].key = key
            cells[key].count += 1
            cells[key].sum.r += r
            cells[key].sum.g += g
            cells[key].sum.b += b
        }
        var boxes: [[Cell]] = [cells.filter { $0.count > 0 }]
        while boxes.count < maxColors {
            // Split the box with the widest channel range (ties: more pixels).
            var best = -1
            var bestScore = 0
            for (i, box) in boxes.enumerated() where box.count > 1 {
                let score = widest(box).range * 1_000_000 + min(999_999, box.reduce(0) { $0 + $1.count })
                if score > bestScore {
                    bestScore = score
                    best = i
                }
            }
            guard best >= 0 else { break }
            let channel = widest(boxes[best]).channel
            let sorted = boxes[best].sorted { component($0, channel) < component($1, channel) }
            let total = sorted.reduce(0) { $0 + $1.count }
            var running = 0
            var split = 1
            for (i, cell) in sorted.enumerated() {
                running += cell.count
                if running * 2 >= total {
                    split = min(max(i + 1, 1), sorted.count - 1)
                    break
                }
            }
            boxes[best] = Array(sorted[..<split])
            boxes.append(Array(sorted[split...]))
        }
        var palette: [UInt8] = []
        var means: [(Int, Int, Int)] = []
        for box in boxes {
            let count = box.reduce(0) { $0 + $1.count }
            let r = box.reduce(0) { $0 + $1.sum.r } / max(count, 1)
            let g = box.reduce(0) { $0 + $1.sum.g } / max(count, 1)
            let b = box.reduce(0) { $0 + $1.sum.b } / max(count, 1)
            means.append((r, g, b))
            palette += [UInt8(r), UInt8(g), UInt8(b)]
        }
        // Each occupied cell maps to the palette colour nearest its mean.
        var cellIndex = [UInt8](repeating: 0, count: 1 << 15)
        for cell in cells where cell.count > 0 {
            let m = cell.mean
            var bestIndex = 0
            var bestDistance = Int.max
            for (i, p) in means.enumerated() {
                let dr = m.r - p.0, dg = m.g - p.1, db = m.b - p.2
                let distance = 3 * dr * dr + 4 * dg * dg + 2 * db * db
                if distance < bestDistance {
                    bestDistance = distance
                    bestIndex = i
                }
            }
            cellIndex[cell.key] = UInt8(bestIndex)
        }
        let tIndex = hasTransparent ? means.count : nil
        if hasTransparent { palette += [0, 0, 0] }
        var indices = [UInt8](repeating: 0, count: pixelCount)
        for i in 0..<pixelCount {
            let p = i * 4
            if rgba[p + 3] < 128 {
                indices[i] = UInt8(tIndex ?? 0)
            } else {
                let key = (Int(rgba[p]) >> 3) << 10 | (Int(rgba[p + 1]) >> 3) << 5 | Int(rgba[p + 2]) >> 3
                indices[i] = cellIndex[key]
            }
        }
        return GIFIndexedFrame(palette: palette, indices: indices, transparentIndex: tIndex)
    }

    private static func component(_ cell: Cell, _ channel: Int) -> Int {
        switch channel {
        case 0: cell.key >> 10
        case 1: (cell.key >> 5) & 31
        default: cell.key & 31
        }
    }

    private static func widest(_ box: [Cell]) -> (channel: Int, range: Int) {
        var best = (channel: 0, range: -1)
        for channel in 0..<3 {
            var lo = Int.max, hi = Int.min
            for cell in box {
                let v = component(cell, channel)
                lo = min(lo, v)
                hi = max(hi, v)
            }
            if hi - lo > best.range { best = (channel, hi - lo) }
        }
        return best
    }
}
