import ImageCore

/// Finds the busiest window of an image, for ``ImageServiceQuery/Gravity/smart``: a saliency score without a model.
///
/// The score of a pixel is what draws the eye in a photo, as libvips' `attention` crop weighs it: luminance edges
/// (a central difference in both directions), colour saturation, and skin tones; fully transparent pixels score
/// nothing. The image is first averaged down to at most ``analysisSide`` pixels on its long side (the choice of a
/// window doesn't need more), scores are summed in a summed-area table, and every window position is tried in
/// O(1) each. Ties go to the position nearest the centre, so a flat image crops like `center`.
///
/// Stateless; thread-safe; O(pixels) after the reduction.
enum SmartCrop {
    /// The long side the image is reduced to before scoring.
    static let analysisSide = 160

    /// The top-left corner of the `window`-sized rectangle of `pixels` with the highest score.
    static func origin(of window: PixelSize, in pixels: PixelBuffer) -> (x: Int, y: Int) {
        let (width, height) = (pixels.width, pixels.height)
        guard window.width < width || window.height < height, width > 0, height > 0 else { return (0, 0) }
        let factor = max(1, Double(max(width, height)) / Double(analysisSide))
        let small =
            factor > 1
            ? pixels.areaResampled(
                width: max(1, Int(Double(width) / factor)), height: max(1, Int(Double(height) / factor)))
            : pixels
        let sx = Double(small.width) / Double(width)
        let sy = Double(small.height) / Double(height)
        let table = SummedArea(scores: scores(small), width: small.width, height: small.height)
        let ww = min(small.width, max(1, Int((Double(window.width) * sx).rounded())))
        let wh = min(small.height, max(1, Int((Double(window.height) * sy).rounded())))
        let centreX = Double(small.width - ww) / 2
        let centreY = Double(small.height - wh) / 2
        var best = (x: 0, y: 0, score: -1.0, distance: Double.infinity)
        for y in 0...(small.height - wh) {
            for x in 0...(small.width - ww) {
                let score = table.sum(x: x, y: y, width: ww, height: wh)
                let distance =
                    (Double(x) - centreX) * (Double(x) - centreX) + (Double(y) - centreY) * (Double(y) - centreY)
                if score > best.score + 1e-9 || (abs(score - best.score) <= 1e-9 && distance < best.distance) {
                    best = (x, y, score, distance)
                }
            }
        }
        return (Int((Double(best.x) / sx).rounded()), Int((Double(best.y) / sy).rounded()))
    }

    /// One score per pixel of `pixels`, row by row.
    static func scores(_ pixels: PixelBuffer) -> [Double] {
        let (width, height) = (pixels.width, pixels.height)
        let layout = pixels.layout
        let channels = layout.bytesPerPixel
        let bytes = pixels.bytes
        var luma = [Double](repeating: 0, count: width * height)
        var colour = [Double](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let i = y * pixels.bytesPerRow + x * channels
                let (r, g, b, a): (Double, Double, Double, Double)
                switch layout {
                case .rgba8:
                    (r, g, b, a) = (Double(bytes[i]), Double(bytes[i + 1]), Double(bytes[i + 2]), Double(bytes[i + 3]))
                case .rgb8: (r, g, b, a) = (Double(bytes[i]), Double(bytes[i + 1]), Double(bytes[i + 2]), 255)
                case .gray8: (r, g, b, a) = (Double(bytes[i]), Double(bytes[i]), Double(bytes[i]), 255)
                case .grayAlpha8:
                    (r, g, b, a) = (Double(bytes[i]), Double(bytes[i]), Double(bytes[i]), Double(bytes[i + 1]))
                }
                let p = y * width + x
                luma[p] = 0.299 * r + 0.587 * g + 0.114 * b
                guard a > 0 else {
                    colour[p] = -1  // transparent: no score at all
                    continue
                }
                let saturation = max(r, g, b) - min(r, g, b)
                // A common RGB skin rule (Kovac et al.): warm, red-dominant, not grey.
                let skin = r > 95 && g > 40 && b > 20 && r > g && r > b && abs(r - g) > 15 ? 60.0 : 0
                colour[p] = 0.5 * saturation + skin
            }
        }
        var result = [Double](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let p = y * width + x
                guard colour[p] >= 0 else { continue }
                let dx = abs(luma[y * width + min(width - 1, x + 1)] - luma[y * width + max(0, x - 1)])
                let dy = abs(luma[min(height - 1, y + 1) * width + x] - luma[max(0, y - 1) * width + x])
                result[p] = dx + dy + colour[p]
            }
        }
        return result
    }

    /// Sums of rectangles in O(1) after one pass.
    struct SummedArea {
        let stride: Int
        let table: [Double]

        init(scores: [Double], width: Int, height: Int) {
            stride = width + 1
            var table = [Double](repeating: 0, count: (width + 1) * (height + 1))
            for y in 0..<height {
                var row = 0.0
                for x in 0..<width {
                    row += scores[y * width + x]
                    table[(y + 1) * stride + x + 1] = table[y * stride + x + 1] + row
                }
            }
            self.table = table
        }

        func sum(x: Int, y: Int, width: Int, height: Int) -> Double {
            table[(y + height) * stride + x + width] - table[y * stride + x + width] - table[(y + height) * stride + x]
                + table[y * stride + x]
        }
    }
}
