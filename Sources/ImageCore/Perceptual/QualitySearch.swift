import Foundation

/// The bounded search over an encoder's integer quality levels that both ``PerceptualTarget`` and
/// ``ImageEncodeOptions/maxFileSize`` use: find the boundary of a monotone test with few encodes.
///
/// Levels are the encoder's own scale, higher meaning better quality (JPEG 1...100, WebP 0...100, AVIF's 63 minus
/// the quantizer). Each probe measures one level: a value (the output's distance, or its size) that moves one way
/// with the level, and the level passes when the value is at most the threshold. Between probes the next level is
/// interpolated in log space from the two nearest probes around the threshold (or extrapolated with `logSlope`, the
/// expected change of the log value per level, then with the measured slope and half as far again, until the
/// threshold is bracketed), so one or two probes usually land next to the boundary; a measured value that breaks
/// monotony falls back to bisection. The answer is always a
/// probed level: the search never reports a level it did not measure.
///
/// Thread-safe: a pure function of its inputs and the `measure` closure.
public enum QualitySearch {
    /// One measured level.
    public struct Probe<Payload> {
        /// The level.
        public let level: Int
        /// What was measured (a distance, a byte count).
        public let value: Double
        /// What the probe produced (the encoded bytes).
        public let payload: Payload

        /// Creates a probe (a measurement the caller made before the search, passed as `known`).
        public init(level: Int, value: Double, payload: Payload) {
            self.level = level
            self.value = value
            self.payload = payload
        }
    }

    /// What a search found.
    public struct Outcome<Payload> {
        /// The passing probe nearest the boundary; nil when no probe passed.
        public let best: Probe<Payload>?
        /// Every probe in the order it was made.
        public let probes: [Probe<Payload>]
    }

    /// The lowest level whose value is at most `threshold`, for a value that falls as the level rises (a
    /// distance).
    ///
    /// Starts at `start`; stops when the boundary is found, when the lowest level passes or the highest fails, or
    /// after `maxProbes` probes. When the probes so far all failed, the last probe allowed goes to the highest
    /// level, so a passing level is found whenever the highest one passes.
    public static func lowestPassing<Payload, E: Error>(
        levels: ClosedRange<Int>, start: Int, threshold: Double, logSlope: Double, maxProbes: Int,
        measure: (Int) throws(E) -> (value: Double, payload: Payload)
    ) throws(E) -> Outcome<Payload> {
        try search(
            levels: levels, start: start, threshold: threshold, logSlope: -abs(logSlope), maxProbes: maxProbes,
            known: [], measure: measure)
    }

    /// The highest level whose value is at most `threshold`, for a value that rises with the level (a size).
    ///
    /// `known` are probes already made (the first encode at the requested quality), reused without measuring
    /// again. Without a probe budget (`maxProbes` nil) the search runs until the boundary is found: about
    /// log2 of the range in the worst case, two or three probes when sizes follow the expected slope.
    public static func highestPassing<Payload, E: Error>(
        levels: ClosedRange<Int>, start: Int, threshold: Double, logSlope: Double, maxProbes: Int? = nil,
        known: [Probe<Payload>] = [], measure: (Int) throws(E) -> (value: Double, payload: Payload)
    ) throws(E) -> Outcome<Payload> {
        // Mirrored: level x becomes -x, so the value falls as the mirrored level rises and the highest passing
        // level becomes the lowest passing mirrored one.
        let mirrored = (-levels.upperBound)...(-levels.lowerBound)
        let outcome = try search(
            levels: mirrored, start: -start, threshold: threshold, logSlope: -abs(logSlope),
            maxProbes: maxProbes ?? (mirrored.count + 1), forceTop: false,
            known: known.map { Probe(level: -$0.level, value: $0.value, payload: $0.payload) },
            measure: { (level: Int) throws(E) in try measure(-level) })
        func unmirror(_ probe: Probe<Payload>) -> Probe<Payload> {
            Probe(level: -probe.level, value: probe.value, payload: probe.payload)
        }
        return Outcome(best: outcome.best.map(unmirror), probes: outcome.probes.map(unmirror))
    }

    /// `x` as a level step, saturating: a threshold of 0 (`maxFileSize: 0`), a flat or zero slope or a measured value
    /// of 0 or infinity make the log-space arithmetic infinite or NaN, and `Int(_:)` traps on those. NaN is no step
    /// (the callers then step by one); the rest is clamped far beyond any level range.
    static func whole(_ x: Double) -> Int {
        guard !x.isNaN else { return 0 }
        return Int(max(-1e15, min(1e15, x)))
    }

    /// The engine: the lowest level in `levels` whose value is ≤ `threshold`, the value non-increasing in level.
    static func search<Payload, E: Error>(
        levels: ClosedRange<Int>, start: Int, threshold: Double, logSlope: Double, maxProbes: Int,
        forceTop: Bool = true, known: [Probe<Payload>],
        measure: (Int) throws(E) -> (value: Double, payload: Payload)
    ) throws(E) -> Outcome<Payload> {
        var probes: [Probe<Payload>] = []
        var pass: Probe<Payload>?
        var fail: Probe<Payload>?
        func record(_ probe: Probe<Payload>) {
            if probe.value <= threshold {
                if pass == nil || probe.level < pass!.level { pass = probe }
            } else if fail == nil || probe.level > fail!.level {
                fail = probe
            }
        }
        func nextLevel() -> Int? {
            if let pass, pass.level == levels.lowerBound { return nil }
            if let fail, fail.level == levels.upperBound { return nil }
            switch (fail, pass) {
            case (let fail?, let pass?):
                guard pass.level - fail.level > 1 else { return nil }
                let inner = (fail.level + 1)...(pass.level - 1)
                guard fail.value > pass.value, pass.value > 0 else { return (fail.level + pass.level) / 2 }
                // Where the log value crosses the threshold on the line through the two bracketing probes.
                let t = (log(fail.value) - log(threshold)) / (log(fail.value) - log(pass.value))
                let guess = Double(fail.level) + t * Double(pass.level - fail.level)
                return clamp(whole(guess.rounded(.up)), inner)
            case (let fail?, nil):
                // Every probe failed: step up by the hinted slope, then by the slope measured between the two
                // highest failing probes — half as far again, since the hint already fell short once and measured
                // distances are noisy (the max norm is not monotone in quality): the aim is to bracket the boundary.
                let measured = measuredSlope(below: fail)
                let steps = (log(threshold) - log(max(fail.value, .leastNormalMagnitude))) / (measured ?? logSlope)
                let overshoot = measured == nil ? 1 : overshootFactor
                return clamp(
                    fail.level + max(1, whole((steps * overshoot).rounded(.up))), (fail.level + 1)...levels.upperBound)
            case (nil, let pass?):
                let measured = measuredSlope(above: pass)
                let steps =
                    (log(threshold) - log(max(pass.value, .leastNormalMagnitude))) / (measured ?? logSlope)
                    * (measured == nil ? 1 : overshootFactor)
                let down = max(1, whole((-steps).rounded(.down)))
                return clamp(pass.level - down, levels.lowerBound...(pass.level - 1))
            case (nil, nil):
                return clamp(start, levels)
            }
        }
        func measuredSlope(below fail: Probe<Payload>) -> Double? {
            guard let other = probes.filter({ $0.level < fail.level }).max(by: { $0.level < $1.level }),
                other.value > fail.value, fail.value > 0
            else { return nil }
            return (log(fail.value) - log(other.value)) / Double(fail.level - other.level)
        }
        func measuredSlope(above pass: Probe<Payload>) -> Double? {
            guard let other = probes.filter({ $0.level > pass.level }).min(by: { $0.level < $1.level }),
                pass.value > other.value, other.value > 0
            else { return nil }
            return (log(other.value) - log(pass.value)) / Double(other.level - pass.level)
        }

        // Known probes (made by the caller before the search) bound it like measured ones, wherever they lie.
        for probe in known { record(probe) }
        var next: Int? = known.isEmpty ? clamp(start, levels) : nextLevel()
        var measured = 0
        while let level = next, measured < maxProbes {
            let (value, payload) = try measure(level)
            measured += 1
            let probe = Probe(level: level, value: value, payload: payload)
            probes.append(probe)
            record(probe)
            next = nextLevel()
            // The last probe allowed goes to the top when nothing passed yet (the best the format can do).
            if forceTop, pass == nil, measured == maxProbes - 1, let fail, fail.level < levels.upperBound,
                !probes.contains(where: { $0.level == levels.upperBound })
            {
                next = levels.upperBound
            }
        }
        return Outcome(best: pass, probes: probes)
    }

    /// How much further than the measured slope predicts an extrapolation steps once the hint missed.
    static let overshootFactor = 1.5

    static func clamp(_ value: Int, _ range: ClosedRange<Int>) -> Int {
        min(max(value, range.lowerBound), range.upperBound)
    }
}
