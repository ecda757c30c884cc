/// Deterministic number formatting for transformer keys.
///
/// Keys must be identical across processes and platforms, so numbers are printed with a fixed number of decimals
/// by integer arithmetic (no locale, no `printf`). Transformers store their floating-point parameters already
/// rounded with ``quantize(_:decimals:)`` to the printed precision, so two transformers with equal keys really do
/// produce the same pixels.
enum KeyFormat {
    /// Rounds `value` to `decimals` places (half away from zero); -0 becomes 0, non-finite values pass through.
    static func quantize(_ value: Double, decimals: Int) -> Double {
        guard value.isFinite else { return value }
        let scale = powerOfTen(decimals)
        let scaled = (value * scale).rounded()
        // Beyond 2^53 the value has no fractional digits left to round.
        guard abs(scaled) < 9.0e15 else { return value }
        let result = scaled / scale
        return result == 0 ? 0 : result
    }

    /// Prints `value` with exactly `decimals` decimals, e.g. `fixed(4, decimals: 2) == "4.00"`.
    static func fixed(_ value: Double, decimals: Int) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let scale = powerOfTen(decimals)
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e15 else { return value.description }
        let units = Int64(scaled)
        let divisor = Int64(scale)
        let whole = units / divisor
        var text = (value < 0 && units != 0) ? "-" : ""
        text += String(whole)
        if decimals > 0 {
            let fraction = String(units % divisor)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }

    private static func powerOfTen(_ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<max(0, exponent) { result *= 10 }
        return result
    }
}
