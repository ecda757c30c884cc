import ImageCore

/// Reads rows of a source image as premultiplied floats, optionally area-averaged by integer factors first.
///
/// With `kx × ky` > 1 each "row" is a row of the box-reduced image (pixel `(bx, by)` is the mean of source
/// pixels `bx*kx ..< (bx+1)*kx`, `by*ky ..< (by+1)*ky`, partial boxes at the right and bottom averaging what
/// exists). Box rows are computed on demand, so the reduced image never exists in full. The boxes are summed in
/// integers, as libvips' `vips_shrink` does: the `ky` source rows are added into 32-bit lanes with ImageCore's SIMD
/// widening adds (straight alpha first weighed to `c·a`, `a·255`), then each box's `kx` pixels are summed and
/// converted to a premultiplied float once; no source pixel is converted to floats. Holds raw pointers valid only
/// inside the caller's `withUnsafeBufferPointer`; used by one resize call at a time.
struct ResampleSource {
    /// First byte of the source pixels.
    let base: UnsafePointer<UInt8>
    /// Source row stride.
    let bytesPerRow: Int
    /// Source width in pixels.
    let width: Int
    /// Source height in pixels.
    let height: Int
    /// Converter from the source layout.
    let codec: RowCodec
    /// Horizontal box factor (1 = none).
    let kx: Int
    /// Vertical box factor (1 = none).
    let ky: Int
    /// Layout and alpha mode of the source (how box sums become premultiplied floats).
    let layout: PixelLayout
    let alphaMode: AlphaMode

    /// Width of the (possibly box-reduced) image rows served.
    var servedWidth: Int { (width + kx - 1) / kx }
    /// Height of the (possibly box-reduced) image served.
    var servedHeight: Int { (height + ky - 1) / ky }

    /// True when straight alpha is weighed before summing.
    private var weighs: Bool { layout.hasAlpha && alphaMode == .straight }

    /// Integer lanes the scratch of ``fetch(row:from:to:into:scratch:)`` must hold for `columns` served pixels.
    func scratchCapacity(columns: Int) -> Int { kx == 1 && ky == 1 ? 0 : columns * kx * layout.bytesPerPixel }

    /// Writes served row `y`, columns `x0 ..< x1`, to `dst[0 ..< x1 - x0]`.
    ///
    /// - Parameter scratch: at least ``scratchCapacity(columns:)`` lanes, clobbered.
    func fetch(
        row y: Int, from x0: Int, to x1: Int, into dst: UnsafeMutablePointer<SIMD4<Float>>, scratch: BoxScratch
    ) {
        let bpp = codec.bytesPerPixel
        let columns = x1 - x0
        if kx == 1 && ky == 1 {
            codec.load(base + y * bytesPerRow + x0 * bpp, columns, dst)
            return
        }
        let sx0 = x0 * kx
        let sourceColumns = min(x1 * kx, width) - sx0
        let lanes = sourceColumns * bpp
        let sy0 = y * ky
        let sy1 = min(sy0 + ky, height)
        let sums = scratch.sums
        sums.update(repeating: 0, count: lanes)
        for sy in sy0..<sy1 {
            let row = base + sy * bytesPerRow + sx0 * bpp
            if weighs {
                AreaKernels.weigh(row, pixels: sourceColumns, channels: bpp, into: scratch.weighed)
                AreaKernels.add(UnsafePointer(scratch.weighed), into: sums, count: lanes)
            } else {
                AreaKernels.add(row, into: sums, count: lanes)
            }
        }
        let rows = sy1 - sy0
        var lane = 0
        for bx in 0..<columns {
            let covered = min(kx, sourceColumns - bx * kx)
            var total = SIMD4<UInt32>.zero
            for _ in 0..<covered {
                for c in 0..<bpp { total[c] &+= sums[lane + c] }
                lane += bpp
            }
            dst[bx] = premultiplied(total, count: rows * covered)
        }
    }

    /// The mean premultiplied float pixel of a box from its integer sums over `count` pixels.
    @inline(__always)
    private func premultiplied(_ total: SIMD4<UInt32>, count: Int) -> SIMD4<Float> {
        let n = Float(count)
        let sum = SIMD4<Float>(total)
        switch (layout, weighs) {
        case (.rgba8, true): return sum / (255 * n)  // (Σc·a, Σa·255) / 255
        case (.rgba8, false): return sum / n
        case (.rgb8, _): return SIMD4(sum[0], sum[1], sum[2], 255 * n) / n
        case (.gray8, _): return SIMD4(sum[0], sum[0], sum[0], 255 * n) / n
        case (.grayAlpha8, true): return SIMD4(sum[0], sum[0], sum[0], sum[1]) / (255 * n)
        case (.grayAlpha8, false): return SIMD4(sum[0], sum[0], sum[0], sum[1]) / n
        }
    }
}

/// Integer scratch of one stripe's box sums; owns its memory. Not thread-safe: one stripe.
final class BoxScratch {
    /// 32-bit lanes of the `ky` rows' sums.
    let sums: UnsafeMutablePointer<UInt32>
    /// A straight-alpha row weighed to 16-bit premultiplied lanes.
    let weighed: UnsafeMutablePointer<UInt16>

    init(lanes: Int) {
        sums = .allocate(capacity: max(1, lanes))
        weighed = .allocate(capacity: max(1, lanes))
    }

    deinit {
        sums.deallocate()
        weighed.deallocate()
    }
}
