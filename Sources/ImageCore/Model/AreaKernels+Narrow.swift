/// The horizontal pass on 32-bit lanes, the common case of ``AreaReducer``: 8-bit pixels of 3 or 4 channels, no
/// straight alpha to weigh, and a source area whose largest total (255 · width · height) fits 32 bits, which is every
/// source up to 16.8 MP. One pixel's channels are one `SIMD4<UInt32>`, so a source column costs one multiply-add
/// instead of one 64-bit multiply per channel, and a row whose whole and partial sums are apart is combined once,
/// vectorised, instead of at every read. The totals are the same integers the general pass computes and are
/// normalised by the same ``AreaNormalizer/byte(_:_:)``, so the bytes are identical.
extension AreaKernels {
    /// Whether the narrow pass is exact for a source of `area` pixels.
    static func narrowFits(area: Int) -> Bool { area <= Int(UInt32.max) / 255 }

    /// Lanes a narrow row must have beyond its `count`: a 3-channel pixel is read as four lanes.
    static let narrowPadding = 4

    /// `out[i] = UInt32(whole[i]) · weight + (partial?[i] ?? 0)` for `count` lanes.
    static func combine(
        _ whole: UnsafePointer<UInt16>, weight: UInt32, partial: UnsafePointer<UInt32>?,
        into out: UnsafeMutablePointer<UInt32>, count: Int
    ) {
        let source = UnsafeRawPointer(whole)
        let target = UnsafeMutableRawPointer(out)
        let w = SIMD8<UInt32>(repeating: weight)
        var i = 0
        if let partial {
            let extra = UnsafeRawPointer(partial)
            while i &+ 8 <= count {
                let lanes = SIMD8<UInt32>(
                    truncatingIfNeeded: source.loadUnaligned(fromByteOffset: i &* 2, as: SIMD8<UInt16>.self))
                let sum = lanes &* w &+ extra.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self)
                target.storeBytes(of: sum, toByteOffset: i &* 4, as: SIMD8<UInt32>.self)
                i &+= 8
            }
            while i < count {
                out[i] = UInt32(whole[i]) &* weight &+ partial[i]
                i &+= 1
            }
        } else {
            while i &+ 8 <= count {
                let lanes = SIMD8<UInt32>(
                    truncatingIfNeeded: source.loadUnaligned(fromByteOffset: i &* 2, as: SIMD8<UInt16>.self))
                target.storeBytes(of: lanes &* w, toByteOffset: i &* 4, as: SIMD8<UInt32>.self)
                i &+= 8
            }
            while i < count {
                out[i] = UInt32(whole[i]) &* weight
                i &+= 1
            }
        }
    }

    /// Filters one row of combined 32-bit lanes into output row `out`, for 3 or 4 channels.
    ///
    /// - Precondition: `lanes` has ``narrowPadding`` readable lanes past the row (a 3-channel pixel is loaded as
    ///   four), and ``narrowFits(area:)`` holds for the source.
    static func horizontalNarrow<C: AreaChannels>(
        _: C.Type, lanes: UnsafePointer<UInt32>, axis: AreaAxisView, reciprocal: UInt64,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        let channels = C.count
        let raw = UnsafeRawPointer(lanes)
        let interiorWeight = SIMD4<UInt32>(repeating: UInt32(truncatingIfNeeded: axis.destination))
        @inline(__always) func pixel(_ column: Int) -> SIMD4<UInt32> {
            raw.loadUnaligned(fromByteOffset: column &* channels &* 4, as: SIMD4<UInt32>.self)
        }
        for x in 0..<axis.count {
            let first = axis.first[x]
            let last = axis.last[x]
            var total = pixel(first) &* SIMD4(repeating: UInt32(truncatingIfNeeded: axis.firstWeight[x]))
            if last > first {
                var column = first &+ 1
                if column < last {
                    var inner = pixel(column)
                    column &+= 1
                    while column < last {
                        inner &+= pixel(column)
                        column &+= 1
                    }
                    total &+= inner &* interiorWeight
                }
                total &+= pixel(last) &* SIMD4(repeating: UInt32(truncatingIfNeeded: axis.lastWeight[x]))
            }
            let o = out + x &* channels
            o[0] = AreaNormalizer.byte(UInt64(total[0]), reciprocal)
            o[1] = AreaNormalizer.byte(UInt64(total[1]), reciprocal)
            o[2] = AreaNormalizer.byte(UInt64(total[2]), reciprocal)
            if channels == 4 { o[3] = AreaNormalizer.byte(UInt64(total[3]), reciprocal) }
        }
    }
}
