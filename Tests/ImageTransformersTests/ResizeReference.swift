import Foundation
import ImageCore

@testable import ImageTransformers

/// A straightforward resampler in `Double`, written from the definitions rather than from the SDK's code:
/// for output pixel i the source centre is `start + (i + ½)·scale`; every source pixel j contributes
/// `K((j + ½ − centre) / max(scale, 1))`, and the weights are normalised over the pixels that exist.
enum ResizeReference {
    static func kernel(_ filter: ResizeFilter, _ x: Double) -> Double {
        switch filter {
        case .lanczos3:
            if x == 0 { return 1 }
            if abs(x) >= 3 { return 0 }
            return (sin(.pi * x) / (.pi * x)) * (sin(.pi * x / 3) / (.pi * x / 3))
        case .catmullRom:
            let t = abs(x)
            if t < 1 { return 1.5 * t * t * t - 2.5 * t * t + 1 }
            if t < 2 { return -0.5 * t * t * t + 2.5 * t * t - 4 * t + 2 }
            return 0
        case .box:
            return x > -0.5 && x <= 0.5 ? 1 : 0
        }
    }

    /// Weight matrix `[output][input]` for one axis.
    static func weights(input: Int, output: Int, start: Double, span: Double, filter: ResizeFilter) -> [[Double]] {
        let scale = span / Double(output)
        let stretch = max(scale, 1)
        return (0..<output).map { i in
            let centre = start + (Double(i) + 0.5) * scale
            let raw = (0..<input).map { j in kernel(filter, (Double(j) + 0.5 - centre) / stretch) }
            let sum = raw.reduce(0, +)
            return raw.map { $0 / sum }
        }
    }

    /// Premultiplied `[y][x][channel]` planes of an RGBA (straight) buffer, in Double.
    static func premultipliedPlanes(_ buffer: PixelBuffer) -> [[[Double]]] {
        (0..<buffer.height).map { y in
            (0..<buffer.width).map { x in
                let p = Fixtures.px(buffer, x, y).map(Double.init)
                let a = p[3] / 255
                return [p[0] * a, p[1] * a, p[2] * a, p[3]]
            }
        }
    }

    /// Separable resampling of premultiplied planes.
    static func resample(
        _ planes: [[[Double]]], width: Int, height: Int, outWidth: Int, outHeight: Int,
        x: (start: Double, span: Double), y: (start: Double, span: Double), filter: ResizeFilter
    ) -> [[[Double]]] {
        let wx = weights(input: width, output: outWidth, start: x.start, span: x.span, filter: filter)
        let wy = weights(input: height, output: outHeight, start: y.start, span: y.span, filter: filter)
        return (0..<outHeight).map { oy in
            (0..<outWidth).map { ox in
                (0..<4).map { c in
                    var total = 0.0
                    for sy in 0..<height where wy[oy][sy] != 0 {
                        for sx in 0..<width where wx[ox][sx] != 0 {
                            total += wy[oy][sy] * wx[ox][sx] * planes[sy][sx][c]
                        }
                    }
                    return total
                }
            }
        }
    }

    /// Area average by integer factors (partial boxes at the edges average what exists).
    static func boxReduce(_ planes: [[[Double]]], width: Int, height: Int, kx: Int, ky: Int) -> [[[Double]]] {
        let bw = (width + kx - 1) / kx
        let bh = (height + ky - 1) / ky
        return (0..<bh).map { by in
            (0..<bw).map { bx in
                (0..<4).map { c in
                    var total = 0.0
                    var n = 0.0
                    for sy in (by * ky)..<min(by * ky + ky, height) {
                        for sx in (bx * kx)..<min(bx * kx + kx, width) {
                            total += planes[sy][sx][c]
                            n += 1
                        }
                    }
                    return total / n
                }
            }
        }
    }

    /// The documented resize: area average by ⌊s/2⌋ when s ≥ 4 (not for the box filter), then the filter.
    static func resize(
        _ buffer: PixelBuffer, to size: PixelSize, mode: ResizeTransformer.Mode, filter: ResizeFilter,
        useAreaRule: Bool = true
    ) -> [[[Double]]] {
        let w = Double(buffer.width)
        let h = Double(buffer.height)
        var outW = size.width
        var outH = size.height
        var x = (start: 0.0, span: w)
        var y = (start: 0.0, span: h)
        switch mode {
        case .fill: break
        case .aspectFit:
            let s = min(Double(size.width) / w, Double(size.height) / h)
            // The SDK's rule: rounded, but never below one pixel (a 60×4 source fit into 5×1 is 5×1, not 5×0).
            outW = max(1, Int((w * s).rounded()))
            outH = max(1, Int((h * s).rounded()))
        case .aspectFill:
            let s = max(Double(size.width) / w, Double(size.height) / h)
            x = ((w - Double(size.width) / s) / 2, Double(size.width) / s)
            y = ((h - Double(size.height) / s) / 2, Double(size.height) / s)
        }
        func factor(_ s: Double) -> Int { useAreaRule && filter != .box && s >= 4 ? Int(s / 2) : 1 }
        let kx = factor(x.span / Double(outW))
        let ky = factor(y.span / Double(outH))
        var planes = premultipliedPlanes(buffer)
        var inW = buffer.width
        var inH = buffer.height
        if kx > 1 || ky > 1 {
            planes = boxReduce(planes, width: inW, height: inH, kx: kx, ky: ky)
            inW = (inW + kx - 1) / kx
            inH = (inH + ky - 1) / ky
        }
        let kxd = Double(kx)
        let kyd = Double(ky)
        return resample(
            planes, width: inW, height: inH, outWidth: outW, outHeight: outH,
            x: (x.start / kxd, x.span / kxd), y: (y.start / kyd, y.span / kyd), filter: filter)
    }

    /// Straight 8-bit expectation of a premultiplied reference pixel (clamped like the SDK).
    static func straight(_ p: [Double]) -> [Double] {
        let a = min(255, max(0, p[3]))
        guard a >= 0.5 else { return [0, 0, 0, 0] }
        return [p[0], p[1], p[2]].map { min(255, max(0, $0 * 255 / p[3])) } + [a]
    }

    /// The largest channel difference between a buffer and a reference.
    static func maxDifference(_ buffer: PixelBuffer, _ reference: [[[Double]]]) -> Double {
        var worst = 0.0
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let expected = straight(reference[y][x])
                let actual = Fixtures.px(buffer, x, y)
                for c in 0..<4 { worst = max(worst, abs(Double(actual[c]) - expected[c])) }
            }
        }
        return worst
    }

    /// The mean channel difference between a buffer and a reference.
    static func meanDifference(_ buffer: PixelBuffer, _ reference: [[[Double]]]) -> Double {
        var total = 0.0
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let expected = straight(reference[y][x])
                let actual = Fixtures.px(buffer, x, y)
                for c in 0..<4 { total += abs(Double(actual[c]) - expected[c]) }
            }
        }
        return total / Double(buffer.width * buffer.height * 4)
    }
}
