/// Reads rows of a source image as premultiplied floats, optionally area-averaged by integer factors first.
///
/// With `kx × ky` > 1 each "row" is a row of the box-reduced image (pixel `(bx, by)` is the mean of source
/// pixels `bx*kx ..< (bx+1)*kx`, `by*ky ..< (by+1)*ky`, partial boxes at the right and bottom averaging what
/// exists). Box rows are computed on demand, so the reduced image never exists in full. Holds raw pointers
/// valid only inside the caller's `withUnsafeBufferPointer`; used by one resize call at a time.
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

    /// Width of the (possibly box-reduced) image rows served.
    var servedWidth: Int { (width + kx - 1) / kx }
    /// Height of the (possibly box-reduced) image served.
    var servedHeight: Int { (height + ky - 1) / ky }

    /// Source pixels the scratch buffer of ``fetch(row:from:to:into:scratch:)`` must hold for `columns`.
    func scratchCapacity(columns: Int) -> Int { kx == 1 && ky == 1 ? 0 : columns * kx }

    /// Writes served row `y`, columns `x0 ..< x1`, to `dst[0 ..< x1 - x0]`.
    ///
    /// - Parameter scratch: at least ``scratchCapacity(columns:)`` pixels, clobbered.
    func fetch(
        row y: Int, from x0: Int, to x1: Int, into dst: UnsafeMutablePointer<SIMD4<Float>>,
        scratch: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        let bpp = codec.bytesPerPixel
        let columns = x1 - x0
        if kx == 1 && ky == 1 {
            codec.load(base + y * bytesPerRow + x0 * bpp, columns, dst)
            return
        }
        let sx0 = x0 * kx
        let sourceColumns = min(x1 * kx, width) - sx0
        let sy0 = y * ky
        let sy1 = min(sy0 + ky, height)
        dst.update(repeating: .zero, count: columns)
        for sy in sy0..<sy1 {
            codec.load(base + sy * bytesPerRow + sx0 * bpp, sourceColumns, scratch)
            if kx == 1 {
                for i in 0..<columns { dst[i] += scratch[i] }
                continue
            }
            var i = 0
            for bx in 0..<columns {
                let end = min(i + kx, sourceColumns)
                var sum = SIMD4<Float>.zero
                while i < end {
                    sum += scratch[i]
                    i += 1
                }
                dst[bx] += sum
            }
        }
        let rows = Float(sy1 - sy0)
        let fullScale = 1 / (rows * Float(kx))
        for bx in 0..<columns {
            let covered = min(kx, sourceColumns - bx * kx)
            dst[bx] *= covered == kx ? fullScale : 1 / (rows * Float(covered))
        }
    }
}
