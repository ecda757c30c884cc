/// An exact area-average (box) resample fed one source row at a time, so a decoder can shrink while it decodes
/// and never hold the full-size image.
///
/// Every output pixel is the average of the source area it covers, weighted by coverage, computed in integers:
/// the weights are exact (see ``AreaAxis``), sums are exact, and the only rounding is the final division, so the
/// result is the true area average rounded to the nearest level (ties may go either way). Vertical first: each
/// source row is added into one row of accumulators as it arrives (rows an output row covers whole are added
/// unweighted with Swift SIMD widening adds; partly covered rows times their integer weight); when an output row
/// is complete, one horizontal pass turns it into bytes. Straight alpha weighs colour by alpha (a transparent
/// pixel adds no colour, so edges don't darken); premultiplied and opaque pixels are averaged as they are.
///
/// Memory: a few rows of the source width plus the output, whatever the source height. Not thread-safe: one
/// decode feeds it. ``PixelBuffer/areaResampled(width:height:)`` feeds it every row of a buffer, so a decoder that
/// streams rows into it produces exactly the bytes a full decode followed by `areaResampled` does.
package final class AreaReducer {
    /// Source size.
    package let sourceWidth: Int
    package let sourceHeight: Int
    /// Output size.
    package let width: Int
    package let height: Int
    /// Layout and alpha mode of both the rows pushed and the result.
    package let layout: PixelLayout
    package let alphaMode: AlphaMode
    /// Source rows pushed so far.
    package private(set) var rowsPushed = 0

    private let channels: Int
    private let lanes: Int
    private let horizontal: AreaAxis
    private let vertical: AreaAxis
    private let normalizer: AreaNormalizer
    private let accumulator: AreaAccumulator
    /// Straight-alpha rows converted to 16-bit premultiplied lanes (nil for other pixels).
    private let weighedRow: UnsafeMutablePointer<UInt16>?
    /// The combined 32-bit lanes of the narrow horizontal pass (nil when the general pass runs).
    private let narrowRow: UnsafeMutablePointer<UInt32>?
    /// The result's pooled storage; every byte is written by the time the last row is pushed.
    private let output: PixelStorage
    private let outputRowBytes: Int

    /// Prepares a resample of `sourceWidth × sourceHeight` rows of `layout` to `width × height`.
    ///
    /// - Precondition: all four sizes are at least 1 and at most ``PixelBuffer/maximumDimension``, the source has
    ///   at most 2^46 pixels (so every 64-bit sum fits; decoders' own size limits are far below), and the output
    ///   fits in memory (the caller checked its budget).
    package convenience init(
        sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode
    ) {
        self.init(
            sourceWidth: sourceWidth, sourceHeight: sourceHeight, width: width, height: height, layout: layout,
            alphaMode: alphaMode, narrowPass: true)
    }

    /// Prepares a resample like ``init(sourceWidth:sourceHeight:width:height:layout:alphaMode:)``; `narrowPass`
    /// false forces the general horizontal pass where the narrow one would run (tests compare the two).
    package init(
        sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode,
        narrowPass: Bool
    ) {
        precondition(sourceWidth > 0 && sourceHeight > 0 && width > 0 && height > 0, "AreaReducer needs sizes ≥ 1")
        let limit = PixelBuffer.maximumDimension
        precondition(sourceWidth <= limit && sourceHeight <= limit && width <= limit && height <= limit)
        precondition(sourceWidth * sourceHeight <= 1 << 46, "AreaReducer: source over 2^46 pixels")
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.width = width
        self.height = height
        self.layout = layout
        self.alphaMode = layout.hasAlpha ? alphaMode : .none
        channels = layout.bytesPerPixel
        lanes = sourceWidth * channels
        let weighted = layout.hasAlpha && alphaMode == .straight
        horizontal = AreaAxis(source: sourceWidth, destination: width)
        vertical = AreaAxis(source: sourceHeight, destination: height)
        accumulator = AreaAccumulator(
            lanes: lanes, weighted: weighted, sourceHeight: sourceHeight, height: height)
        weighedRow = weighted ? .allocate(capacity: lanes) : nil
        if narrowPass && (channels == 3 || channels == 4) && accumulator.hasNarrowLanes
            && AreaKernels.narrowFits(area: sourceWidth * sourceHeight)
        {
            let capacity = lanes + AreaKernels.narrowPadding
            narrowRow = .allocate(capacity: capacity)
            narrowRow?.initialize(repeating: 0, count: capacity)
        } else {
            narrowRow = nil
        }
        outputRowBytes = width * channels
        output = PixelStorage(count: outputRowBytes * height)
        normalizer = AreaNormalizer(area: sourceWidth * sourceHeight, weighted: weighted)
    }

    deinit {
        weighedRow?.deallocate()
        narrowRow?.deallocate()
    }

    /// True once every source row was pushed.
    package var isComplete: Bool { rowsPushed == sourceHeight }

    /// Adds the next source row: `sourceWidth` pixels of ``layout`` starting at `row`.
    ///
    /// - Precondition: fewer than `sourceHeight` rows were pushed.
    package func push(_ row: UnsafePointer<UInt8>) {
        precondition(rowsPushed < sourceHeight, "AreaReducer: more rows than the source has")
        let k = rowsPushed
        var lanes = AreaAccumulator.Row.bytes(row)
        if let weighedRow {
            AreaKernels.weigh(row, pixels: sourceWidth, channels: channels, into: weighedRow)
            lanes = .weighed(UnsafePointer(weighedRow))
        }
        // Outputs this row reaches, in order: the one it continues (or starts), then any that end inside it.
        var y = vertical.firstOutput(ofSource: k)
        while y < height {
            let weight = vertical.weight(source: k, output: y)
            if weight == 0 { break }
            if weight == vertical.destination {
                accumulator.addWhole(lanes)
            } else {
                accumulator.addPartial(lanes, weight: weight)
            }
            guard vertical.outputEnds(y, atOrBefore: k) else { break }
            emit(y)
            y += 1
        }
        rowsPushed += 1
    }

    /// Adds `count` consecutive source rows, `bytesPerRow` apart.
    package func push(rows base: UnsafePointer<UInt8>, count: Int, bytesPerRow: Int) {
        for r in 0..<count { push(base + r * bytesPerRow) }
    }

    /// The result.
    ///
    /// - Precondition: every source row was pushed.
    package func finish() -> PixelBuffer {
        precondition(isComplete, "AreaReducer: \(rowsPushed) of \(sourceHeight) rows pushed")
        return PixelBuffer(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: outputRowBytes,
            storage: output)
    }

    /// Output row `y` is complete: filter it horizontally into bytes; the accumulator starts over.
    private func emit(_ y: Int) {
        let row = output.bytes.baseAddress! + y * outputRowBytes
        horizontal.withView { axis in
            if let narrowRow {
                let reciprocal = normalizer.reciprocal
                let channels = channels
                accumulator.drainNarrow(scratch: narrowRow) { lanes in
                    if channels == 3 {
                        AreaKernels.horizontalNarrow(
                            ThreeChannels.self, lanes: lanes, axis: axis, reciprocal: reciprocal, into: row)
                    } else {
                        AreaKernels.horizontalNarrow(
                            FourChannels.self, lanes: lanes, axis: axis, reciprocal: reciprocal, into: row)
                    }
                }
            } else {
                accumulator.drain(
                    into: HorizontalPass(channels: channels, axis: axis, normalizer: normalizer, row: row))
            }
        }
    }
}

/// The horizontal pass of one output row, specialised for the channel count and the accumulator's lanes.
struct HorizontalPass: AreaLanesVisitor {
    let channels: Int
    let axis: AreaAxisView
    let normalizer: AreaNormalizer
    let row: UnsafeMutablePointer<UInt8>

    func visit<L: AreaLanes>(_ lanes: L) {
        switch channels {
        case 1: AreaKernels.horizontal(OneChannel.self, lanes: lanes, axis: axis, normalizer: normalizer, into: row)
        case 2: AreaKernels.horizontal(TwoChannels.self, lanes: lanes, axis: axis, normalizer: normalizer, into: row)
        case 3:
            AreaKernels.horizontal(ThreeChannels.self, lanes: lanes, axis: axis, normalizer: normalizer, into: row)
        default:
            AreaKernels.horizontal(FourChannels.self, lanes: lanes, axis: axis, normalizer: normalizer, into: row)
        }
    }
}
