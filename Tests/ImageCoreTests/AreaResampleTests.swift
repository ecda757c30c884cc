import ImageCore
import PropertyBased
import Testing

/// `PixelBuffer.areaResampled` (the shared area-average resampler every coder's thumbnail path ends in) against a
/// plain floating-point model written from the definition, over random sizes, scale factors, layouts and alpha
/// modes. The resampler computes in exact integers, so the stated bound is half a level: the model's value rounded
/// either way (a result may differ from a naive `round` only at an exact tie). Failures print PropertyBased's seed
/// (`.fixedSeed(...)`) and the case.
@Suite("Area resample")
struct AreaResampleTests {
    /// One random case: a source (with row padding), a target, and the seed of its pixels.
    struct Case: CustomStringConvertible {
        var width: Int
        var height: Int
        var targetWidth: Int
        var targetHeight: Int
        var layout: PixelLayout
        var alphaMode: AlphaMode
        var padding: Int
        var seed: UInt64
        /// Pixels only 0 or 255 (stresses ties and all-transparent areas).
        var extremes: Bool

        var description: String {
            "\(width)x\(height) \(layout) \(alphaMode) +\(padding) → \(targetWidth)x\(targetHeight), pixel seed \(seed)"
                + (extremes ? ", extremes" : "")
        }

        func source() -> PixelBuffer {
            var rng = SplitMix(seed)
            let bytesPerRow = width * layout.bytesPerPixel + padding
            var bytes = (0..<(bytesPerRow * height)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if extremes { bytes = bytes.map { $0 < 128 ? 0 : 255 } }
            return PixelBuffer(
                width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: bytesPerRow,
                bytes: bytes)
        }
    }

    static let layouts: [PixelLayout] = [.rgba8, .rgb8, .gray8, .grayAlpha8]

    /// Sources up to 40×40, targets from 1 pixel to twice the source (reductions and enlargements).
    static let cases = zip(
        zip(Gen.int(in: 1...40), Gen.int(in: 1...40), Gen.int(in: 1...80), Gen.int(in: 1...80)),
        zip(Gen.int(in: 0...3), Gen.bool, Gen.int(in: 0...3), Gen.uint64()),
        Gen.int(in: 0...3)
    ).map { all in
        let (geometry, pixels, kind) = all
        return Case(
            width: geometry.0, height: geometry.1, targetWidth: min(geometry.2, 2 * geometry.0),
            targetHeight: min(geometry.3, 2 * geometry.1), layout: layouts[pixels.0],
            alphaMode: pixels.1 ? .straight : .premultiplied, padding: pixels.2, seed: pixels.3, extremes: kind == 0)
    }

    @Test("matches a floating-point area average within half a level, for any size, scale, layout and alpha")
    func matchesModel() async {
        await propertyCheck(count: 300, input: Self.cases) { c in
            let source = c.source()
            let out = source.areaResampled(width: c.targetWidth, height: c.targetHeight)
            #expect(out.width == c.targetWidth && out.height == c.targetHeight, "\(c)")
            #expect(out.layout == source.layout && out.alphaMode == source.alphaMode, "\(c)")
            let worst = AreaModel.worstDifference(out, AreaModel.resample(source, c.targetWidth, c.targetHeight))
            #expect(worst <= 0.5 + 1e-9, "\(c): off by \(worst)")
        }
    }

    @Test("turning or mirroring commutes with the resample, exactly (the AVIF thumbnail path relies on it)")
    func commutesWithOrientation() async {
        let orientations: [ImageOrientation] = [
            .up, .upMirrored, .down, .downMirrored, .leftMirrored, .right, .rightMirrored, .left,
        ]
        await propertyCheck(count: 100, input: Self.cases, Gen.int(in: 0...7)) { c, turn in
            let orientation = orientations[turn]
            let source = c.source()
            let swapped = orientation.swapsDimensions
            let turnedFirst = source.oriented(orientation).areaResampled(
                width: swapped ? c.targetHeight : c.targetWidth, height: swapped ? c.targetWidth : c.targetHeight)
            let resampledFirst = source.areaResampled(width: c.targetWidth, height: c.targetHeight)
                .oriented(orientation)
            #expect(Self.tight(turnedFirst) == Self.tight(resampledFirst), "\(c), \(orientation)")
        }
    }

    @Test("rows pushed in strips of any height give the bytes of the whole-buffer resample")
    func stripsEqualWholeBuffer() async {
        await propertyCheck(count: 100, input: Self.cases, Gen.int(in: 1...9)) { c, strip in
            let source = c.source()
            guard c.targetWidth != c.width || c.targetHeight != c.height else { return }
            let reducer = AreaReducer(
                sourceWidth: c.width, sourceHeight: c.height, width: c.targetWidth, height: c.targetHeight,
                layout: c.layout, alphaMode: c.alphaMode)
            source.bytes.withUnsafeBufferPointer { bytes in
                var row = 0
                while row < c.height {
                    let count = min(strip, c.height - row)
                    reducer.push(
                        rows: bytes.baseAddress! + row * source.bytesPerRow, count: count,
                        bytesPerRow: source.bytesPerRow)
                    row += count
                }
            }
            #expect(reducer.isComplete)
            #expect(reducer.finish() == source.areaResampled(width: c.targetWidth, height: c.targetHeight), "\(c)")
        }
    }

    /// Shapes that take the other accumulator lanes: more than 257 rows per output row (16-bit sums folded),
    /// straight alpha over 66,051 rows and outputs over 65,535 rows (64-bit partial sums), very wide rows.
    @Test(
        "extreme ratios and sizes stay within half a level",
        arguments: [
            (3, 1000, 2, 2, PixelLayout.rgb8, AlphaMode.none), (5, 600, 3, 1, .gray8, .none),
            (2, 70_000, 1, 3, .rgba8, .straight), (1, 70_000, 1, 1, .grayAlpha8, .straight),
            (70_000, 2, 3, 1, .rgba8, .premultiplied), (3, 20, 2, 66_000, .rgba8, .straight),
            (2, 3, 1, 70_000, .rgb8, .none), (1, 1, 5, 3, .grayAlpha8, .straight),
        ])
    func extremeShapes(
        width: Int, height: Int, targetWidth: Int, targetHeight: Int, layout: PixelLayout, mode: AlphaMode
    ) {
        let c = Case(
            width: width, height: height, targetWidth: targetWidth, targetHeight: targetHeight, layout: layout,
            alphaMode: mode, padding: 0, seed: UInt64(width * 31 + height), extremes: false)
        let source = c.source()
        let out = source.areaResampled(width: targetWidth, height: targetHeight)
        let worst = AreaModel.worstDifference(out, AreaModel.resample(source, targetWidth, targetHeight))
        #expect(worst <= 0.5 + 1e-9, "\(c): off by \(worst)")
    }

    @Test("known values: a 1-pixel checkerboard halves to mid-gray; transparent pixels add no colour")
    func knownValues() {
        let board = PixelBuffer(
            width: 4, height: 2, layout: .gray8, bytes: [0, 255, 0, 255, 255, 0, 255, 0])
        #expect(board.areaResampled(width: 2, height: 1).bytes == [128, 128])
        // Straight RGBA: red opaque beside transparent green averages to red at half alpha, no green tint.
        let edge = PixelBuffer(
            width: 2, height: 1, layout: .rgba8, alphaMode: .straight, bytes: [255, 0, 0, 255, 0, 255, 0, 0])
        #expect(edge.areaResampled(width: 1, height: 1).bytes == [255, 0, 0, 128])
        // Premultiplied pixels are averaged as they are.
        let premultiplied = PixelBuffer(
            width: 2, height: 1, layout: .rgba8, alphaMode: .premultiplied, bytes: [200, 0, 0, 200, 0, 0, 0, 0])
        #expect(premultiplied.areaResampled(width: 1, height: 1).bytes == [100, 0, 0, 100])
        // Enlarging repeats pixels.
        let two = PixelBuffer(width: 2, height: 1, layout: .gray8, bytes: [10, 20])
        #expect(two.areaResampled(width: 4, height: 2).bytes == [10, 10, 20, 20, 10, 10, 20, 20])
    }

    /// The narrow horizontal pass (32-bit lanes, one SIMD multiply-add per pixel) computes the general pass's
    /// integers and rounds them the same way: the bytes are identical, for every shape that takes it (3 and 4
    /// channels without straight alpha), reductions by any factor, rows folded past 257, and enlargements.
    @Test("the narrow horizontal pass gives exactly the general pass's bytes")
    func narrowPassIsTheGeneralPass() async {
        let shapes = zip(
            zip(Gen.int(in: 1...300), Gen.int(in: 1...300), Gen.int(in: 1...120), Gen.int(in: 1...120)),
            zip(Gen.bool, Gen.int(in: 0...2), Gen.uint64(), Gen.bool)
        )
        await propertyCheck(count: 150, input: shapes) { geometry, kind in
            let (width, height, targetWidth, targetHeight) = geometry
            let (rgba, mode, seed, extremes) = kind
            let layout: PixelLayout = rgba ? .rgba8 : .rgb8
            let alphaMode: AlphaMode = [.none, .premultiplied, .straight][mode]
            let c = Case(
                width: width, height: height, targetWidth: targetWidth, targetHeight: targetHeight, layout: layout,
                alphaMode: alphaMode, padding: 0, seed: seed, extremes: extremes)
            let source = c.source()
            var outputs: [[UInt8]] = []
            for narrow in [true, false] {
                let reducer = AreaReducer(
                    sourceWidth: width, sourceHeight: height, width: targetWidth, height: targetHeight,
                    layout: layout, alphaMode: alphaMode, narrowPass: narrow)
                source.bytes.withUnsafeBufferPointer { bytes in
                    reducer.push(rows: bytes.baseAddress!, count: height, bytesPerRow: source.bytesPerRow)
                }
                outputs.append(Self.tight(reducer.finish()))
            }
            #expect(outputs[0] == outputs[1], "\(c)")
        }
    }

    static func tight(_ buffer: PixelBuffer) -> [UInt8] {
        let rowBytes = buffer.width * buffer.layout.bytesPerPixel
        return (0..<buffer.height).flatMap { y in
            buffer.bytes[(y * buffer.bytesPerRow)..<(y * buffer.bytesPerRow + rowBytes)]
        }
    }
}

/// The area average from its definition, in `Double`: output pixel (i, j) covers the source rectangle
/// `[i·w/W, (i+1)·w/W) × [j·h/H, (j+1)·h/H)`; each source pixel counts by the area it shares with it (computed
/// from integer interval ends, so no pixel gets a spurious sliver), colour weighted by alpha for straight alpha.
enum AreaModel {
    /// `[y][x][channel]`; colour of a straight-alpha pixel with no coverage is nil (any value is right).
    static func resample(_ source: PixelBuffer, _ width: Int, _ height: Int) -> [[[Double?]]] {
        let channels = source.layout.bytesPerPixel
        let weighted = source.layout.hasAlpha && source.alphaMode == .straight
        func overlap(_ out: Int, _ outCount: Int, _ src: Int, _ srcCount: Int) -> Double {
            Double(max(0, min((out + 1) * srcCount, (src + 1) * outCount) - max(out * srcCount, src * outCount)))
        }
        return (0..<height).map { oy in
            (0..<width).map { ox in
                var sums = [Double](repeating: 0, count: channels)
                var total = 0.0
                // Only the rows and columns that can overlap (a superset), for speed on tall inputs.
                let rows = (oy * source.height / height)...min(source.height - 1, (oy + 1) * source.height / height)
                let columns = (ox * source.width / width)...min(source.width - 1, (ox + 1) * source.width / width)
                for sy in rows {
                    let wy = overlap(oy, height, sy, source.height)
                    guard wy > 0 else { continue }
                    for sx in columns {
                        let w = wy * overlap(ox, width, sx, source.width)
                        guard w > 0 else { continue }
                        let p = source.pixel(x: sx, y: sy).map(Double.init)
                        total += w
                        if weighted {
                            let a = p[channels - 1]
                            for c in 0..<(channels - 1) { sums[c] += p[c] * a * w }
                            sums[channels - 1] += a * w
                        } else {
                            for c in 0..<channels { sums[c] += p[c] * w }
                        }
                    }
                }
                guard weighted else { return sums.map { $0 / total } }
                let alpha = sums[channels - 1]
                return sums.dropLast().map { alpha > 0 ? $0 / alpha : nil } + [alpha / total]
            }
        }
    }

    /// The largest channel difference (channels the model leaves open are skipped).
    static func worstDifference(_ buffer: PixelBuffer, _ model: [[[Double?]]]) -> Double {
        var worst = 0.0
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let actual = Array(buffer.pixel(x: x, y: y))
                for (c, expected) in model[y][x].enumerated() {
                    guard let expected else { continue }
                    worst = max(worst, abs(Double(actual[c]) - expected))
                }
            }
        }
        return worst
    }
}

/// SplitMix64: a small seeded generator for test pixels.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
