/// Precomputed, normalised filter weights for resampling one axis.
///
/// Output pixel `i` reads `lengths[i]` consecutive inputs starting at `starts[i]` with the weights at
/// `weights[i * taps ..< i * taps + lengths[i]]`; `taps` is the largest window. Windows never leave
/// `0..<inputSize` (edge pixels are reused by renormalising, as Pillow does) and both window ends are
/// non-decreasing in `i`, which the streaming resampler's ring buffer relies on.
struct ResampleWeights: Sendable {
    /// Number of output pixels.
    let count: Int
    /// Stride between windows in ``weights``; the largest window length.
    let taps: Int
    /// First input index of each window.
    let starts: [Int]
    /// Length of each window.
    let lengths: [Int]
    /// Weights, `count * taps` of them, each window summing to 1.
    let weights: [Float]

    /// Computes weights mapping the source interval `start ..< start + span` (in input pixel units, may be
    /// fractional) onto `outputSize` pixels.
    ///
    /// - Precondition: `inputSize > 0`, `outputSize > 0`, `span > 0`, and the interval inside `0...inputSize`.
    init(inputSize: Int, start: Double, span: Double, outputSize: Int, filter: ResizeFilter) {
        let scale = span / Double(outputSize)
        let filterScale = max(scale, 1)
        let support = filter.support * filterScale
        let inverse = 1 / filterScale
        // floor(c + s + ½) - floor(c - s + ½) ≤ 2s + 1, so no window is longer than this.
        let taps = max(1, min(Int((support * 2).rounded(.up)) + 1, inputSize))
        var starts = [Int](repeating: 0, count: outputSize)
        var lengths = [Int](repeating: 0, count: outputSize)
        var weights = [Float](repeating: 0, count: outputSize * taps)
        var row = [Double](repeating: 0, count: taps)
        for i in 0..<outputSize {
            let center = start + (Double(i) + 0.5) * scale
            var lo = Int((center - support + 0.5).rounded(.down))
            var hi = Int((center + support + 0.5).rounded(.down))
            lo = max(0, min(lo, inputSize - 1))
            hi = max(lo + 1, min(hi, inputSize))
            var sum = 0.0
            for j in lo..<hi {
                let w = filter.weight((Double(j) - center + 0.5) * inverse)
                row[j - lo] = w
                sum += w
            }
            if sum == 0 {
                // Only possible for the box filter on a degenerate window: fall back to the nearest pixel.
                for j in lo..<hi { row[j - lo] = 0 }
                let nearest = max(lo, min(hi - 1, Int(center.rounded(.down))))
                row[nearest - lo] = 1
                sum = 1
            }
            starts[i] = lo
            lengths[i] = hi - lo
            for j in 0..<(hi - lo) { weights[i * taps + j] = Float(row[j] / sum) }
        }
        self.count = outputSize
        self.taps = taps
        self.starts = starts
        self.lengths = lengths
        self.weights = weights
    }

    /// The first input index any window reads.
    var firstInput: Int { starts.first ?? 0 }

    /// One past the last input index any window reads.
    var endInput: Int {
        var end = 0
        for i in 0..<count { end = max(end, starts[i] + lengths[i]) }
        return end
    }
}

/// Raw pointers into a ``ResampleWeights``, valid only inside ``ResampleWeights/withView(_:)``.
struct ResampleWeightsView {
    /// First input index of each window.
    let starts: UnsafePointer<Int>
    /// Length of each window.
    let lengths: UnsafePointer<Int>
    /// Weights with stride `taps`.
    let weights: UnsafePointer<Float>
    /// Stride of ``weights``.
    let taps: Int
}

extension ResampleWeights {
    /// Calls `body` with raw pointers to the tables, so hot loops skip Array bounds checks.
    func withView<R>(_ body: (ResampleWeightsView) -> R) -> R {
        starts.withUnsafeBufferPointer { s in
            lengths.withUnsafeBufferPointer { l in
                weights.withUnsafeBufferPointer { w in
                    body(
                        ResampleWeightsView(
                            starts: s.baseAddress!, lengths: l.baseAddress!, weights: w.baseAddress!, taps: taps))
                }
            }
        }
    }
}
