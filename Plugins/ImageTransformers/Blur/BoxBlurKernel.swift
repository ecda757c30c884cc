/// One pass of a box blur with a fractional radius, run with running sums (O(1) per pixel at any radius).
///
/// The box has weight 1 on offsets `-radius ... radius` and weight `fraction` on `±(radius + 1)`, normalised.
/// Three passes approximate a Gaussian; ``init(sigma:passes:)`` picks the box whose variance is σ²/passes exactly
/// (Pillow's "extended box" construction), so the blur has the requested standard deviation. Edges are extended
/// (clamped), which keeps constant images constant.
struct BoxBlurKernel: Sendable {
    /// Integer part of the radius.
    let radius: Int
    /// Weight of the two outermost taps, 0 ≤ fraction < 1.
    let fraction: Float

    /// The extended box with variance `sigma² / passes`.
    init(sigma: Double, passes: Int) {
        let variance = sigma * sigma / Double(passes)
        let wide = (12 * variance + 1).squareRoot()
        let l = max(0, Int(((wide - 1) / 2).rounded(.down)))
        let ld = Double(l)
        let a = (2 * ld + 1) * (ld * (ld + 1) - 3 * variance) / (6 * (variance - (ld + 1) * (ld + 1)))
        radius = l
        fraction = Float(min(max(a, 0), 1))
    }

    /// Blurs `n` elements of `lanes` pixels each (element `i` at `src + i * lanes`) from `src` into `dst`.
    ///
    /// - Parameter sums: scratch for `lanes` running sums.
    func pass(
        _ src: UnsafePointer<SIMD4<Float>>, _ dst: UnsafeMutablePointer<SIMD4<Float>>, count n: Int, lanes: Int,
        sums: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        guard n > 0 else { return }
        let l = radius
        let a = fraction
        let norm = 1 / (Float(2 * l + 1) + 2 * a)
        let last = n - 1
        @inline(__always) func clamp(_ j: Int) -> Int { j < 0 ? 0 : (j > last ? last : j) }
        // Window sum for i = 0: offsets -l…0 all clamp to element 0, offsets 1…l to min(j, last).
        let direct = min(l, last)
        let beyond = Float(l - direct)
        for lane in 0..<lanes {
            var sum = src[lane] * Float(l + 1)
            var j = 1
            while j <= direct {
                sum += src[j * lanes + lane]
                j += 1
            }
            sums[lane] = sum + src[last * lanes + lane] * beyond
        }
        for i in 0..<n {
            let outer0 = clamp(i - l - 1) * lanes
            let outer1 = clamp(i + l + 1) * lanes
            let leaving = clamp(i - l) * lanes
            let out = i * lanes
            if a == 0 {
                for lane in 0..<lanes {
                    let s = sums[lane]
                    dst[out + lane] = s * norm
                    sums[lane] = s + src[outer1 + lane] - src[leaving + lane]
                }
            } else {
                for lane in 0..<lanes {
                    let s = sums[lane]
                    dst[out + lane] = (s + (src[outer0 + lane] + src[outer1 + lane]) * a) * norm
                    sums[lane] = s + src[outer1 + lane] - src[leaving + lane]
                }
            }
        }
    }
}
