/// Box-filter (area-average) downscaling of 8-bit pixel buffers.
///
/// Every output pixel is the average of the source area it covers, weighted by coverage, which is what a
/// thumbnailer wants after the codec already did the coarse reduction. With straight alpha the colour channels are
/// weighted by alpha so transparent pixels do not darken edges; premultiplied buffers are averaged as they are.
/// Thread-safe: pure function of its inputs.
/// Shared by the coders for thumbnails and `maxPixelSize` after the codec's own coarse reduction (DCT scaling,
/// libwebp scaling); ImageTransformers has the high-quality filters.
enum AreaResampler {
    /// Resamples `source` to `width × height` (each at least 1), keeping its layout and alpha mode.
    static func resample(_ source: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        precondition(width > 0 && height > 0, "resample target must be positive")
        if width == source.width && height == source.height { return source }
        // An empty source has nothing to average: the result is transparent black (the axes need a sample).
        guard source.width > 0, source.height > 0 else {
            return PixelBuffer(width: width, height: height, layout: source.layout, alphaMode: source.alphaMode)
        }
        let channels = source.layout.bytesPerPixel
        let weighAlpha = source.layout.hasAlpha && source.alphaMode == .straight
        let horizontal = Axis(source: source.width, destination: width)
        let vertical = Axis(source: source.height, destination: height)

        // Pass 1: rows of the source, columns of the destination, as floats (alpha-weighted when straight).
        var middle = [Float](repeating: 0, count: source.height * width * channels)
        source.bytes.withUnsafeBufferPointer { src in
            middle.withUnsafeMutableBufferPointer { mid in
                for y in 0..<source.height {
                    let srcRow = y * source.bytesPerRow
                    let midRow = y * width * channels
                    for x in 0..<width {
                        var sums: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        let first = horizontal.first[x]
                        let weightStart = horizontal.weightStart[x]
                        for k in 0..<horizontal.count[x] {
                            let w = horizontal.weights[weightStart + k]
                            let p = srcRow + (first + k) * channels
                            Self.accumulate(&sums, src, at: p, channels: channels, weight: w, weighAlpha: weighAlpha)
                        }
                        Self.store(sums, into: mid, at: midRow + x * channels, channels: channels)
                    }
                }
            }
        }

        // Pass 2: columns, producing 8-bit output.
        let rowBytes = width * channels
        let output = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { out, initialized in
            middle.withUnsafeBufferPointer { mid in
                for y in 0..<height {
                    let first = vertical.first[y]
                    let weightStart = vertical.weightStart[y]
                    for x in 0..<width {
                        var sums: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        for k in 0..<vertical.count[y] {
                            let w = vertical.weights[weightStart + k]
                            let p = ((first + k) * width + x) * channels
                            sums.0 += mid[p] * w
                            if channels > 1 { sums.1 += mid[p + 1] * w }
                            if channels > 2 { sums.2 += mid[p + 2] * w }
                            if channels > 3 { sums.3 += mid[p + 3] * w }
                        }
                        Self.finish(
                            sums, into: out, at: y * rowBytes + x * channels, channels: channels,
                            weighAlpha: weighAlpha)
                    }
                }
            }
            initialized = rowBytes * height
        }
        return PixelBuffer(
            width: width, height: height, layout: source.layout, alphaMode: source.alphaMode, bytes: output)
    }

    @inline(__always)
    private static func accumulate(
        _ sums: inout (Float, Float, Float, Float), _ src: UnsafeBufferPointer<UInt8>, at p: Int, channels: Int,
        weight: Float, weighAlpha: Bool
    ) {
        switch channels {
        case 1:
            sums.0 += Float(src[p]) * weight
        case 2:
            let a = Float(src[p + 1]) * weight
            sums.0 += Float(src[p]) * (weighAlpha ? a / 255 : weight)
            sums.1 += a
        case 3:
            sums.0 += Float(src[p]) * weight
            sums.1 += Float(src[p + 1]) * weight
            sums.2 += Float(src[p + 2]) * weight
        default:
            let a = Float(src[p + 3]) * weight
            let cw = weighAlpha ? a / 255 : weight
            sums.0 += Float(src[p]) * cw
            sums.1 += Float(src[p + 1]) * cw
            sums.2 += Float(src[p + 2]) * cw
            sums.3 += a
        }
    }

    @inline(__always)
    private static func store(
        _ sums: (Float, Float, Float, Float), into mid: UnsafeMutableBufferPointer<Float>, at p: Int, channels: Int
    ) {
        mid[p] = sums.0
        if channels > 1 { mid[p + 1] = sums.1 }
        if channels > 2 { mid[p + 2] = sums.2 }
        if channels > 3 { mid[p + 3] = sums.3 }
    }

    @inline(__always)
    private static func finish(
        _ sums: (Float, Float, Float, Float), into out: UnsafeMutableBufferPointer<UInt8>, at p: Int, channels: Int,
        weighAlpha: Bool
    ) {
        @inline(__always) func byte(_ value: Float) -> UInt8 { UInt8(max(0, min(255, value + 0.5))) }
        switch channels {
        case 1:
            out[p] = byte(sums.0)
        case 2:
            let alpha = sums.1
            out[p] = weighAlpha ? (alpha > 0 ? byte(sums.0 * 255 / alpha) : 0) : byte(sums.0)
            out[p + 1] = byte(alpha)
        case 3:
            out[p] = byte(sums.0)
            out[p + 1] = byte(sums.1)
            out[p + 2] = byte(sums.2)
        default:
            let alpha = sums.3
            if weighAlpha {
                let scale: Float = alpha > 0 ? 255 / alpha : 0
                out[p] = byte(sums.0 * scale)
                out[p + 1] = byte(sums.1 * scale)
                out[p + 2] = byte(sums.2 * scale)
            } else {
                out[p] = byte(sums.0)
                out[p + 1] = byte(sums.1)
                out[p + 2] = byte(sums.2)
            }
            out[p + 3] = byte(alpha)
        }
    }

    /// Coverage weights of one axis: output `i` averages `count[i]` source samples from `first[i]`.
    private struct Axis {
        var first: [Int] = []
        var count: [Int] = []
        var weightStart: [Int] = []
        var weights: [Float] = []

        init(source: Int, destination: Int) {
            let scale = Double(source) / Double(destination)
            first.reserveCapacity(destination)
            for i in 0..<destination {
                let start = Double(i) * scale
                let end = min(Double(source), Double(i + 1) * scale)
                let lo = min(source - 1, Int(start.rounded(.down)))
                let hi = max(lo + 1, min(source, Int(end.rounded(.up))))
                first.append(lo)
                count.append(hi - lo)
                weightStart.append(weights.count)
                var total = 0.0
                var spans: [Double] = []
                for j in lo..<hi {
                    let covered = max(0, min(end, Double(j + 1)) - max(start, Double(j)))
                    spans.append(covered)
                    total += covered
                }
                // Guard against a zero span when upscaling lands between samples: fall back to the nearest one.
                if total <= 0 {
                    spans = spans.indices.map { $0 == 0 ? 1 : 0 }
                    total = 1
                }
                weights.append(contentsOf: spans.map { Float($0 / total) })
            }
        }
    }
}

extension PixelBuffer {
    /// Returns the buffer downscaled to `width × height` by area averaging (box filter), keeping layout and alpha
    /// mode; straight alpha weights the colour so transparent pixels do not darken edges.
    ///
    /// - Precondition: `width` and `height` are at least 1.
    public func areaResampled(width: Int, height: Int) -> PixelBuffer {
        AreaResampler.resample(self, width: width, height: height)
    }
}
