/// The inner loops of ``AreaReducer``: integer row accumulation with Swift SIMD types, and the horizontal pass.
///
/// Vertical accumulation works on whole rows of interleaved channels, so one loop serves every layout: a row
/// that lies entirely inside an output row is added unweighted (widening adds, no multiply), a row the output row
/// only partly covers is multiplied by its integer weight. Pure functions over caller-owned memory; thread-safe.
/// ImageTransformers' integer box pre-reduction uses the 32-bit row sums and ``weigh(_:pixels:channels:into:)``.
package enum AreaKernels {
    /// `acc[i] += row[i]` for `count` lanes, into 16-bit lanes (at most 257 rows of 255 fit).
    static func add(_ row: UnsafePointer<UInt8>, into acc: UnsafeMutablePointer<UInt16>, count: Int) {
        let source = UnsafeRawPointer(row)
        let target = UnsafeMutableRawPointer(acc)
        var i = 0
        while i &+ 16 <= count {
            let bytes = source.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
            let sum =
                target.loadUnaligned(fromByteOffset: i &* 2, as: SIMD16<UInt16>.self)
                &+ SIMD16<UInt16>(truncatingIfNeeded: bytes)
            target.storeBytes(of: sum, toByteOffset: i &* 2, as: SIMD16<UInt16>.self)
            i &+= 16
        }
        while i < count {
            acc[i] &+= UInt16(row[i])
            i &+= 1
        }
    }

    /// `acc[i] += row[i]` for `count` lanes, into 32-bit lanes.
    package static func add(_ row: UnsafePointer<UInt8>, into acc: UnsafeMutablePointer<UInt32>, count: Int) {
        let source = UnsafeRawPointer(row)
        let target = UnsafeMutableRawPointer(acc)
        var i = 0
        while i &+ 16 <= count {
            let bytes = source.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
            let sum =
                target.loadUnaligned(fromByteOffset: i &* 4, as: SIMD16<UInt32>.self)
                &+ SIMD16<UInt32>(truncatingIfNeeded: bytes)
            target.storeBytes(of: sum, toByteOffset: i &* 4, as: SIMD16<UInt32>.self)
            i &+= 16
        }
        while i < count {
            acc[i] &+= UInt32(row[i])
            i &+= 1
        }
    }

    /// `acc[i] += row[i]` for `count` 16-bit lanes, into 32-bit lanes.
    package static func add(_ row: UnsafePointer<UInt16>, into acc: UnsafeMutablePointer<UInt32>, count: Int) {
        let source = UnsafeRawPointer(row)
        let target = UnsafeMutableRawPointer(acc)
        var i = 0
        while i &+ 8 <= count {
            let lanes = source.loadUnaligned(fromByteOffset: i &* 2, as: SIMD8<UInt16>.self)
            let sum =
                target.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self)
                &+ SIMD8<UInt32>(truncatingIfNeeded: lanes)
            target.storeBytes(of: sum, toByteOffset: i &* 4, as: SIMD8<UInt32>.self)
            i &+= 8
        }
        while i < count {
            acc[i] &+= UInt32(row[i])
            i &+= 1
        }
    }

    /// `acc[i] += weight · row[i]` into 32-bit lanes, with a 16-bit weight (a 16 × 16 → 32-bit multiply).
    static func add(
        _ row: UnsafePointer<UInt8>, weight: UInt16, into acc: UnsafeMutablePointer<UInt32>, count: Int
    ) {
        let source = UnsafeRawPointer(row)
        let target = UnsafeMutableRawPointer(acc)
        let w = SIMD8<UInt32>(truncatingIfNeeded: SIMD8<UInt16>(repeating: weight))
        var i = 0
        while i &+ 8 <= count {
            let bytes = source.loadUnaligned(fromByteOffset: i, as: SIMD8<UInt8>.self)
            let product = SIMD8<UInt32>(truncatingIfNeeded: SIMD8<UInt16>(truncatingIfNeeded: bytes)) &* w
            let sum = target.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self) &+ product
            target.storeBytes(of: sum, toByteOffset: i &* 4, as: SIMD8<UInt32>.self)
            i &+= 8
        }
        while i < count {
            acc[i] &+= UInt32(row[i]) &* UInt32(weight)
            i &+= 1
        }
    }

    /// `acc[i] += weight · row[i]` for 16-bit lanes into 32-bit lanes, with a 16-bit weight.
    static func add(
        _ row: UnsafePointer<UInt16>, weight: UInt16, into acc: UnsafeMutablePointer<UInt32>, count: Int
    ) {
        let source = UnsafeRawPointer(row)
        let target = UnsafeMutableRawPointer(acc)
        let w = SIMD8<UInt32>(truncatingIfNeeded: SIMD8<UInt16>(repeating: weight))
        var i = 0
        while i &+ 8 <= count {
            let lanes = source.loadUnaligned(fromByteOffset: i &* 2, as: SIMD8<UInt16>.self)
            let product = SIMD8<UInt32>(truncatingIfNeeded: lanes) &* w
            let sum = target.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self) &+ product
            target.storeBytes(of: sum, toByteOffset: i &* 4, as: SIMD8<UInt32>.self)
            i &+= 8
        }
        while i < count {
            acc[i] &+= UInt32(row[i]) &* UInt32(weight)
            i &+= 1
        }
    }

    /// `acc[i] += weight · row[i]` into 64-bit lanes (`weight` below 2^32, so each product fits).
    static func add(
        _ row: UnsafePointer<UInt8>, weight: UInt64, into acc: UnsafeMutablePointer<UInt64>, count: Int
    ) {
        for i in 0..<count { acc[i] &+= UInt64(row[i]) &* weight }
    }

    /// `acc[i] += weight · row[i]` for 16-bit lanes into 64-bit lanes.
    static func add(
        _ row: UnsafePointer<UInt16>, weight: UInt64, into acc: UnsafeMutablePointer<UInt64>, count: Int
    ) {
        for i in 0..<count { acc[i] &+= UInt64(row[i]) &* weight }
    }

    /// `acc[i] += weight · interior[i]`, then `interior[i] = 0`: folds an unweighted sum into the weighted one
    /// before it could overflow.
    static func fold<I: FixedWidthInteger & UnsignedInteger, P: FixedWidthInteger & UnsignedInteger>(
        _ interior: UnsafeMutablePointer<I>, weight: P, into acc: UnsafeMutablePointer<P>, count: Int
    ) {
        for i in 0..<count {
            acc[i] &+= P(truncatingIfNeeded: interior[i]) &* weight
            interior[i] = 0
        }
    }

    /// Straight-alpha pixels as premultiplied 16-bit lanes on one scale: colour `c·a`, alpha `a·255`, so the
    /// averages weigh colour by coverage (a transparent pixel adds no colour) and every lane is at most 65,025.
    package static func weigh(
        _ row: UnsafePointer<UInt8>, pixels: Int, channels: Int, into lanes: UnsafeMutablePointer<UInt16>
    ) {
        var p = 0
        if channels == 4 {
            // Four pixels at a time, as 32-bit lanes `a b g r`: split each into the 16-bit pairs (r, g) and (b, 255),
            // multiply both by (a, a), interleave back to r g b a.
            let source = UnsafeRawPointer(row)
            let target = UnsafeMutableRawPointer(lanes)
            let low = SIMD4<UInt32>(repeating: 0xFF)
            let opaque = SIMD4<UInt32>(repeating: 0x00FF_0000)
            while p &+ 4 <= pixels {
                let pixel = source.loadUnaligned(fromByteOffset: p &* 4, as: SIMD4<UInt32>.self)
                let alpha = pixel &>> 24
                let pair = unsafeBitCast(alpha | (alpha &<< 16), to: SIMD8<UInt16>.self)
                let redGreen = (pixel & low) | ((pixel & (low &<< 8)) &<< 8)
                let blue = ((pixel &>> 16) & low) | opaque
                let rg = unsafeBitCast(unsafeBitCast(redGreen, to: SIMD8<UInt16>.self) &* pair, to: SIMD4<UInt32>.self)
                let ba = unsafeBitCast(unsafeBitCast(blue, to: SIMD8<UInt16>.self) &* pair, to: SIMD4<UInt32>.self)
                target.storeBytes(
                    of: SIMD4<UInt32>(rg[0], ba[0], rg[1], ba[1]), toByteOffset: p &* 8, as: SIMD4<UInt32>.self)
                target.storeBytes(
                    of: SIMD4<UInt32>(rg[2], ba[2], rg[3], ba[3]), toByteOffset: p &* 8 &+ 16, as: SIMD4<UInt32>.self)
                p &+= 4
            }
            while p < pixels {
                let s = row + p &* 4
                let d = lanes + p &* 4
                let a = UInt16(s[3])
                d[0] = UInt16(s[0]) &* a
                d[1] = UInt16(s[1]) &* a
                d[2] = UInt16(s[2]) &* a
                d[3] = a &* 255
                p &+= 1
            }
        } else {
            while p < pixels {
                let s = row + p &* 2
                let d = lanes + p &* 2
                let a = UInt16(s[1])
                d[0] = UInt16(s[0]) &* a
                d[1] = a &* 255
                p &+= 1
            }
        }
    }
}

/// Where the horizontal pass reads the vertically accumulated value of lane `i`: the full-weight interior sum
/// times its weight, the partial rows' weighted sum, or both.
protocol AreaLanes {
    func value(_ i: Int) -> UInt64
}

/// Only partial rows were added.
struct PartialLanes<P: FixedWidthInteger & UnsignedInteger>: AreaLanes {
    let partial: UnsafePointer<P>
    @inline(__always) func value(_ i: Int) -> UInt64 { UInt64(truncatingIfNeeded: partial[i]) }
}

/// Only full rows were added.
struct InteriorLanes<I: FixedWidthInteger & UnsignedInteger>: AreaLanes {
    let interior: UnsafePointer<I>
    let weight: UInt64
    @inline(__always) func value(_ i: Int) -> UInt64 { UInt64(truncatingIfNeeded: interior[i]) &* weight }
}

/// Both kinds of row were added.
struct MixedLanes<I: FixedWidthInteger & UnsignedInteger, P: FixedWidthInteger & UnsignedInteger>: AreaLanes {
    let interior: UnsafePointer<I>
    let weight: UInt64
    let partial: UnsafePointer<P>
    @inline(__always) func value(_ i: Int) -> UInt64 {
        UInt64(truncatingIfNeeded: interior[i]) &* weight &+ UInt64(truncatingIfNeeded: partial[i])
    }
}

/// A channel count known at compile time, so the horizontal pass unrolls its channel loop.
protocol AreaChannels {
    static var count: Int { get }
}

enum OneChannel: AreaChannels { static var count: Int { 1 } }
enum TwoChannels: AreaChannels { static var count: Int { 2 } }
enum ThreeChannels: AreaChannels { static var count: Int { 3 } }
enum FourChannels: AreaChannels { static var count: Int { 4 } }

/// How the horizontal totals become bytes: `total / area` rounded half up, as a multiply by a 2^-55 fixed-point
/// reciprocal rounded up (a total is at most 65,025 · area, so the product fits 64 bits). Rounding the reciprocal
/// up makes exact ties round up; it can lift a value by at most 255 · area · 2^-55, which is below the distance
/// from any non-tie to a tie (1 / 2·area) for sources up to 8.4 million pixels, and under 2^-24 of a level at 12 MP.
struct AreaNormalizer {
    private static let shift: UInt64 = 55
    /// `2^55 / (sourceWidth · sourceHeight)`, rounded up.
    let reciprocal: UInt64
    /// `2^55 / (255 · sourceWidth · sourceHeight)` for the weighed alpha lane, rounded up.
    let alphaReciprocal: UInt64
    /// Straight alpha: the last lane is `a·255`, colour is `c·a`.
    let weighted: Bool

    init(area: Int, weighted: Bool) {
        let one: UInt64 = 1 << Self.shift
        let a = UInt64(area)
        reciprocal = (one + a - 1) / a
        alphaReciprocal = (one + 255 * a - 1) / (255 * a)
        self.weighted = weighted
    }

    /// `total · reciprocal · 2^-55`, rounded half up, at most 255.
    @inline(__always) static func byte(_ total: UInt64, _ reciprocal: UInt64) -> UInt8 {
        let value = (total &* reciprocal &+ (1 << (shift - 1))) >> shift
        return value >= 255 ? 255 : UInt8(truncatingIfNeeded: value)
    }

    /// `255 · colour / alpha`, rounded, at most 255 (the weighed colour lane never exceeds the alpha lane).
    @inline(__always) static func colour(_ total: UInt64, scale: Double) -> UInt8 {
        let value = Double(Int64(bitPattern: total)) * scale + 0.5
        return value >= 255 ? 255 : UInt8(truncatingIfNeeded: Int32(value))
    }
}

extension AreaKernels {
    /// Filters one vertically accumulated row into output row `out`: `total = Σ weight · value` per channel
    /// over each output's source columns, then normalised.
    static func horizontal<C: AreaChannels, L: AreaLanes>(
        _: C.Type, lanes: L, axis: AreaAxisView, normalizer: AreaNormalizer, into out: UnsafeMutablePointer<UInt8>
    ) {
        let channels = C.count
        let interiorWeight = UInt64(axis.destination)
        for x in 0..<axis.count {
            let first = axis.first[x]
            let last = axis.last[x]
            var total: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            @inline(__always) func add(_ column: Int, _ weight: UInt64) {
                let base = column * channels
                total.0 &+= lanes.value(base) &* weight
                if channels > 1 { total.1 &+= lanes.value(base + 1) &* weight }
                if channels > 2 { total.2 &+= lanes.value(base + 2) &* weight }
                if channels > 3 { total.3 &+= lanes.value(base + 3) &* weight }
            }
            add(first, axis.firstWeight[x])
            if last > first {
                if last > first + 1 {
                    var inner: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
                    var base = (first + 1) * channels
                    for _ in (first + 1)..<last {
                        inner.0 &+= lanes.value(base)
                        if channels > 1 { inner.1 &+= lanes.value(base + 1) }
                        if channels > 2 { inner.2 &+= lanes.value(base + 2) }
                        if channels > 3 { inner.3 &+= lanes.value(base + 3) }
                        base += channels
                    }
                    total.0 &+= inner.0 &* interiorWeight
                    total.1 &+= inner.1 &* interiorWeight
                    total.2 &+= inner.2 &* interiorWeight
                    total.3 &+= inner.3 &* interiorWeight
                }
                add(last, axis.lastWeight[x])
            }
            store(total, channels: channels, normalizer: normalizer, into: out + x * channels)
        }
    }

    @inline(__always)
    private static func store(
        _ total: (UInt64, UInt64, UInt64, UInt64), channels: Int, normalizer: AreaNormalizer,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        guard normalizer.weighted else {
            let r = normalizer.reciprocal
            out[0] = AreaNormalizer.byte(total.0, r)
            if channels > 1 { out[1] = AreaNormalizer.byte(total.1, r) }
            if channels > 2 { out[2] = AreaNormalizer.byte(total.2, r) }
            if channels > 3 { out[3] = AreaNormalizer.byte(total.3, r) }
            return
        }
        // Colour = Σ c·a·w / Σ a·w (exact up to the final rounding); alpha = Σ a·w / Σ w.
        let alpha = channels == 4 ? total.3 : total.1
        out[channels - 1] = AreaNormalizer.byte(alpha, normalizer.alphaReciprocal)
        guard alpha > 0 else {
            for c in 0..<(channels - 1) { out[c] = 0 }
            return
        }
        let scale = 255 / Double(Int64(bitPattern: alpha))
        out[0] = AreaNormalizer.colour(total.0, scale: scale)
        if channels == 4 {
            out[1] = AreaNormalizer.colour(total.1, scale: scale)
            out[2] = AreaNormalizer.colour(total.2, scale: scale)
        }
    }
}

/// Raw pointers into an ``AreaAxis``, valid only inside ``AreaAxis/withView(_:)``.
struct AreaAxisView {
    let count: Int
    let destination: Int
    let first: UnsafePointer<Int>
    let last: UnsafePointer<Int>
    let firstWeight: UnsafePointer<UInt64>
    let lastWeight: UnsafePointer<UInt64>
}

extension AreaAxis {
    /// Calls `body` with raw pointers to the tables, so the horizontal pass skips Array bounds checks.
    func withView<R>(_ body: (AreaAxisView) -> R) -> R {
        first.withUnsafeBufferPointer { f in
            last.withUnsafeBufferPointer { l in
                firstWeight.withUnsafeBufferPointer { fw in
                    lastWeight.withUnsafeBufferPointer { lw in
                        body(
                            AreaAxisView(
                                count: destination, destination: destination, first: f.baseAddress!,
                                last: l.baseAddress!, firstWeight: fw.baseAddress!, lastWeight: lw.baseAddress!))
                    }
                }
            }
        }
    }
}
