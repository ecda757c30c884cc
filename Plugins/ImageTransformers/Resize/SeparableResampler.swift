import ImageCore

/// Separable resampling: a horizontal pass into a ring of filtered rows, then a vertical pass per output row.
///
/// Output rows are split into stripes run in parallel. Each stripe streams through the source: a source row is
/// converted to premultiplied floats (or box-averaged, see ``ResampleSource``), filtered horizontally into a ring
/// of `wy.taps` rows, and each output row is the weighted sum of ring rows, un-premultiplied and stored. Memory
/// beyond the output is a few rows per stripe, whatever the image size. The inner loops run over raw pointers
/// with precomputed `Float` weights.
enum SeparableResampler {
    /// Resamples `source` with the given weight tables into a tightly packed buffer of `layout`/`alphaMode`.
    static func run(
        source: ResampleSource, wx: ResampleWeights, wy: ResampleWeights, layout: PixelLayout,
        alphaMode: AlphaMode
    ) -> PixelBuffer {
        let outWidth = wx.count
        let outHeight = wy.count
        let outCodec = RowCodec(layout: layout, alphaMode: alphaMode)
        let outRowBytes = outWidth * layout.bytesPerPixel
        let columnStart = wx.firstInput
        let columnEnd = wx.endInput
        let columns = columnEnd - columnStart
        let ringRows = wy.taps
        let rowsPerOutput = max(1, wy.endInput - wy.firstInput) / max(1, outHeight)
        let cost = outWidth * (wy.taps + wx.taps * max(1, rowsPerOutput)) + columns * source.kx * source.ky
        return PixelStorage.make(width: outWidth, height: outHeight, layout: layout, alphaMode: alphaMode) { out in
            wx.withView { xw in
                wy.withView { yw in
                    Parallel.forEachStripe(count: outHeight, costPerItem: cost) { rows in
                        let rowBuffer = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: columns)
                        let scratch = BoxScratch(lanes: source.scratchCapacity(columns: columns))
                        let ring = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: ringRows * outWidth)
                        let accumulator = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: outWidth)
                        defer {
                            rowBuffer.deallocate()
                            ring.deallocate()
                            accumulator.deallocate()
                        }
                        // Ring slot r % ringRows holds filtered row r; windows only move forward, and none is
                        // longer than the ring, so a row is never needed after it is overwritten.
                        var computedEnd = yw.starts[rows.lowerBound]
                        for y in rows {
                            let start = yw.starts[y]
                            let length = yw.lengths[y]
                            var r = max(computedEnd, start)
                            while r < start + length {
                                source.fetch(
                                    row: r, from: columnStart, to: columnEnd, into: rowBuffer, scratch: scratch)
                                horizontal(
                                    rowBuffer, offset: columnStart, count: outWidth, weights: xw,
                                    into: ring + (r % ringRows) * outWidth)
                                r += 1
                            }
                            computedEnd = max(computedEnd, start + length)
                            vertical(
                                ring: ring, ringRows: ringRows, width: outWidth, start: start, length: length,
                                weights: yw.weights + y * yw.taps, into: accumulator)
                            outCodec.store(accumulator, outWidth, out + y * outRowBytes)
                        }
                    }
                }
            }
        }
    }

    /// Filters one row: `dst[x] = Σ w · src[starts[x] - offset + t]`.
    @inline(__always)
    private static func horizontal(
        _ src: UnsafePointer<SIMD4<Float>>, offset: Int, count: Int, weights table: ResampleWeightsView,
        into dst: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        for x in 0..<count {
            let p = src + (table.starts[x] - offset)
            let w = table.weights + x * table.taps
            let n = table.lengths[x]
            // Two accumulators halve the dependency chain of the adds.
            var even = SIMD4<Float>.zero
            var odd = SIMD4<Float>.zero
            var t = 0
            while t + 1 < n {
                even += p[t] * w[t]
                odd += p[t + 1] * w[t + 1]
                t += 2
            }
            if t < n { even += p[t] * w[t] }
            dst[x] = even + odd
        }
    }

    /// Sums ring rows `start ..< start + length` with `weights` into `acc`, two rows per sweep.
    @inline(__always)
    private static func vertical(
        ring: UnsafePointer<SIMD4<Float>>, ringRows: Int, width: Int, start: Int, length: Int,
        weights: UnsafePointer<Float>, into acc: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        let first = ring + (start % ringRows) * width
        let w0 = weights[0]
        var t = 1
        if length >= 2 {
            let second = ring + ((start + 1) % ringRows) * width
            let w1 = weights[1]
            for x in 0..<width { acc[x] = first[x] * w0 + second[x] * w1 }
            t = 2
        } else {
            for x in 0..<width { acc[x] = first[x] * w0 }
        }
        while t + 1 < length {
            let a = ring + ((start + t) % ringRows) * width
            let b = ring + ((start + t + 1) % ringRows) * width
            let wa = weights[t]
            let wb = weights[t + 1]
            for x in 0..<width { acc[x] += a[x] * wa + b[x] * wb }
            t += 2
        }
        if t < length {
            let a = ring + ((start + t) % ringRows) * width
            let wa = weights[t]
            for x in 0..<width { acc[x] += a[x] * wa }
        }
    }
}
