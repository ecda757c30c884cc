/// The vertical sums of one output row of an ``AreaReducer``, in the narrowest integer lanes that cannot
/// overflow for its sizes.
///
/// Two sums per lane: rows the output row covers whole, added unweighted (their weight is the same for all, so it
/// is applied once at the end), and partly covered rows times their weight. Which lanes:
/// - 8-bit pixels, output at most 65,535 rows, source at most 16,843,009 rows: whole rows in 16-bit lanes (folded
///   into the partial sum every 257 rows), partial rows in 32-bit lanes with 16-bit weights;
/// - straight alpha (16-bit premultiplied lanes), output at most 65,535 and source at most 66,051 rows: both in
///   32-bit lanes;
/// - anything else: whole rows in 32-bit lanes, partial rows in 64-bit lanes.
/// Every bound follows from a lane's total being at most 255 (65,025 weighed) times the weights added, and the
/// weights of one output row summing to the source height. Not thread-safe: owned by one reducer.
final class AreaAccumulator {
    /// One source row as the accumulator takes it.
    enum Row {
        /// 8-bit channels.
        case bytes(UnsafePointer<UInt8>)
        /// Straight-alpha pixels weighed into 16-bit premultiplied lanes (``AreaKernels/weigh(_:pixels:channels:into:)``).
        case weighed(UnsafePointer<UInt16>)
    }

    private enum Lanes {
        case bytes16(whole: UnsafeMutablePointer<UInt16>, partial: UnsafeMutablePointer<UInt32>)
        case weighed32(whole: UnsafeMutablePointer<UInt32>, partial: UnsafeMutablePointer<UInt32>)
        case wide(whole: UnsafeMutablePointer<UInt32>, partial: UnsafeMutablePointer<UInt64>)
    }

    private let count: Int
    private let lanes: Lanes
    /// Whole rows held before the whole-row lanes could overflow.
    private let wholeLimit: Int
    private var wholeRows = 0
    private var partialTouched = false
    /// The weight of a whole row: the output height, in ``AreaAxis`` units.
    private let wholeWeight: UInt64

    init(lanes count: Int, weighted: Bool, sourceHeight: Int, height: Int) {
        self.count = count
        wholeWeight = UInt64(height)
        if !weighted && height <= 65_535 && sourceHeight <= 16_843_009 {
            lanes = .bytes16(whole: Self.zeroed(count), partial: Self.zeroed(count))
            wholeLimit = 257
        } else if weighted && height <= 65_535 && sourceHeight <= 66_051 {
            lanes = .weighed32(whole: Self.zeroed(count), partial: Self.zeroed(count))
            wholeLimit = 66_051
        } else {
            lanes = .wide(whole: Self.zeroed(count), partial: Self.zeroed(count))
            wholeLimit = Int(UInt32.max) / (weighted ? 65_025 : 255)
        }
    }

    deinit {
        switch lanes {
        case .bytes16(let whole, let partial):
            whole.deallocate()
            partial.deallocate()
        case .weighed32(let whole, let partial):
            whole.deallocate()
            partial.deallocate()
        case .wide(let whole, let partial):
            whole.deallocate()
            partial.deallocate()
        }
    }

    /// `count` zeroed lanes, plus ``AreaKernels/narrowPadding`` (also zeroed) that the narrow pass may read past
    /// the row.
    private static func zeroed<T: FixedWidthInteger>(_ count: Int) -> UnsafeMutablePointer<T> {
        let capacity = count + AreaKernels.narrowPadding
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: capacity)
        pointer.initialize(repeating: 0, count: capacity)
        return pointer
    }

    /// True when ``drainNarrow(scratch:_:)`` can hand the sums over as 32-bit lanes (8-bit pixels, unweighted).
    var hasNarrowLanes: Bool {
        if case .bytes16 = lanes { return true }
        return false
    }

    /// Hands the finished sums to `body` as one row of 32-bit lanes (the partial lanes themselves when no whole row
    /// was added, else whole-row weight × whole rows + partial rows combined into `scratch`), then clears them.
    ///
    /// - Precondition: ``hasNarrowLanes``; `scratch` has `count` + ``AreaKernels/narrowPadding`` lanes, the
    ///   padding initialised; the source area passes ``AreaKernels/narrowFits(area:)`` (so a combined lane fits).
    func drainNarrow(scratch: UnsafeMutablePointer<UInt32>, _ body: (UnsafePointer<UInt32>) -> Void) {
        guard case .bytes16(let whole, let partial) = lanes else {
            preconditionFailure("AreaAccumulator: no narrow lanes")
        }
        if wholeRows > 0 {
            AreaKernels.combine(
                whole, weight: UInt32(truncatingIfNeeded: wholeWeight),
                partial: partialTouched ? UnsafePointer(partial) : nil, into: scratch, count: count)
            body(UnsafePointer(scratch))
            whole.update(repeating: 0, count: count)
        } else {
            body(UnsafePointer(partial))
        }
        if partialTouched { partial.update(repeating: 0, count: count) }
        wholeRows = 0
        partialTouched = false
    }

    /// Adds a row the output row covers whole (weight: the output height in ``AreaAxis`` units).
    func addWhole(_ row: Row) {
        switch (lanes, row) {
        case (.bytes16(let whole, _), .bytes(let bytes)): AreaKernels.add(bytes, into: whole, count: count)
        case (.weighed32(let whole, _), .weighed(let weighed)): AreaKernels.add(weighed, into: whole, count: count)
        case (.wide(let whole, _), .bytes(let bytes)): AreaKernels.add(bytes, into: whole, count: count)
        case (.wide(let whole, _), .weighed(let weighed)): AreaKernels.add(weighed, into: whole, count: count)
        default: preconditionFailure("AreaAccumulator: row kind does not match its lanes")
        }
        wholeRows += 1
        if wholeRows == wholeLimit { foldWhole() }
    }

    /// Adds a row the output row covers in part, times `weight` (less than the output height).
    func addPartial(_ row: Row, weight: Int) {
        switch (lanes, row) {
        case (.bytes16(_, let partial), .bytes(let bytes)):
            AreaKernels.add(bytes, weight: UInt16(weight), into: partial, count: count)
        case (.weighed32(_, let partial), .weighed(let weighed)):
            AreaKernels.add(weighed, weight: UInt16(weight), into: partial, count: count)
        case (.wide(_, let partial), .bytes(let bytes)):
            AreaKernels.add(bytes, weight: UInt64(weight), into: partial, count: count)
        case (.wide(_, let partial), .weighed(let weighed)):
            AreaKernels.add(weighed, weight: UInt64(weight), into: partial, count: count)
        default: preconditionFailure("AreaAccumulator: row kind does not match its lanes")
        }
        partialTouched = true
    }

    /// Moves the whole-row sum, times its weight, into the partial sum before it could overflow.
    private func foldWhole() {
        let w = wholeWeight
        switch lanes {
        case .bytes16(let whole, let partial): AreaKernels.fold(whole, weight: UInt32(w), into: partial, count: count)
        case .weighed32(let whole, let partial):
            AreaKernels.fold(whole, weight: UInt32(w), into: partial, count: count)
        case .wide(let whole, let partial): AreaKernels.fold(whole, weight: w, into: partial, count: count)
        }
        wholeRows = 0
        partialTouched = true
    }

    /// Hands the finished sums (whole-row weight × whole rows + partial rows) to `visitor`, then clears them.
    func drain<V: AreaLanesVisitor>(into visitor: V) {
        switch lanes {
        case .bytes16(let whole, let partial): visit(whole, partial, visitor)
        case .weighed32(let whole, let partial): visit(whole, partial, visitor)
        case .wide(let whole, let partial): visit(whole, partial, visitor)
        }
        wholeRows = 0
        partialTouched = false
    }

    private func visit<
        I: FixedWidthInteger & UnsignedInteger, P: FixedWidthInteger & UnsignedInteger, V: AreaLanesVisitor
    >(
        _ whole: UnsafeMutablePointer<I>, _ partial: UnsafeMutablePointer<P>, _ visitor: V
    ) {
        let weight = wholeWeight
        switch (wholeRows > 0, partialTouched) {
        case (true, true):
            visitor.visit(MixedLanes(interior: UnsafePointer(whole), weight: weight, partial: UnsafePointer(partial)))
        case (true, false): visitor.visit(InteriorLanes(interior: UnsafePointer(whole), weight: weight))
        default: visitor.visit(PartialLanes(partial: UnsafePointer(partial)))
        }
        if wholeRows > 0 { whole.update(repeating: 0, count: count) }
        if partialTouched { partial.update(repeating: 0, count: count) }
    }
}

/// Receives the lanes of a finished output row, with their concrete type, so the pass over them is specialised.
protocol AreaLanesVisitor {
    func visit<L: AreaLanes>(_ lanes: L)
}
