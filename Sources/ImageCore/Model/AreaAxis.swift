/// Exact integer coverage weights of one axis of an area-average (box) resample.
///
/// Measured in units of `1 / destination` source pixels, output `i` covers `[i·source, (i+1)·source)` and source
/// pixel `j` covers `[j·destination, (j+1)·destination)`, so every overlap is an integer: output `i` reads source
/// pixels `first[i] ... last[i]`, the first with weight `firstWeight[i]`, the last with `lastWeight[i]`, every one
/// between with the full weight `destination`, and its weights sum to exactly `source`. No rounding anywhere: the
/// reducer divides once, at the end. Thread-safe: a value.
struct AreaAxis: Sendable {
    /// Source length.
    let source: Int
    /// Destination length.
    let destination: Int
    /// First source index each output reads.
    let first: [Int]
    /// Last source index each output reads (equal to `first` when it reads one pixel).
    let last: [Int]
    /// Weight of the first source pixel.
    let firstWeight: [UInt64]
    /// Weight of the last source pixel (unused when `last == first`).
    let lastWeight: [UInt64]

    /// - Precondition: `source > 0`, `destination > 0` (the products fit: both are at most 2^31).
    init(source: Int, destination: Int) {
        precondition(source > 0 && destination > 0, "AreaAxis needs positive lengths")
        self.source = source
        self.destination = destination
        var first = [Int](repeating: 0, count: destination)
        var last = [Int](repeating: 0, count: destination)
        var firstWeight = [UInt64](repeating: 0, count: destination)
        var lastWeight = [UInt64](repeating: 0, count: destination)
        for i in 0..<destination {
            let start = i * source
            let end = start + source
            let lo = start / destination
            let hi = (end - 1) / destination
            first[i] = lo
            last[i] = hi
            firstWeight[i] = UInt64(min((lo + 1) * destination, end) - start)
            lastWeight[i] = hi > lo ? UInt64(end - hi * destination) : 0
        }
        self.first = first
        self.last = last
        self.firstWeight = firstWeight
        self.lastWeight = lastWeight
    }

    /// The weight source pixel `j` has in output `i` (0 when it is outside), from the definition.
    func weight(source j: Int, output i: Int) -> Int {
        let lo = max(i * source, j * destination)
        let hi = min((i + 1) * source, (j + 1) * destination)
        return max(0, hi - lo)
    }

    /// The first output that source pixel `j` contributes to.
    func firstOutput(ofSource j: Int) -> Int { j * destination / source }

    /// True when output `i` ends inside (or at the end of) source pixel `j`, so `j` is the last it needs.
    func outputEnds(_ i: Int, atOrBefore j: Int) -> Bool { (i + 1) * source <= (j + 1) * destination }
}
