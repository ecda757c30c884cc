import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Testing

/// ``QualitySearch`` against a brute-force model: random monotone value curves over random level ranges, random
/// thresholds, starts, slope hints and probe budgets. Failures print PropertyBased's seed.
@Suite("Quality search")
struct QualitySearchTests {
    struct Case: CustomStringConvertible {
        /// values[i] is the value at level lower + i, non-increasing.
        var lower: Int
        var values: [Double]
        var threshold: Double
        var start: Int
        var slopeHint: Double
        var maxProbes: Int

        var levels: ClosedRange<Int> { lower...(lower + values.count - 1) }
        func value(_ level: Int) -> Double { values[level - lower] }
        /// The model: the lowest level whose value is within the threshold.
        var lowestPassing: Int? { levels.first { value($0) <= threshold } }
        var description: String {
            "levels \(levels) threshold \(threshold) start \(start) hint \(slopeHint) budget \(maxProbes) "
                + "values \(values.map { String(format: "%.3f", $0) })"
        }
    }

    /// Curves that fall by a random factor each level (sometimes not at all: flat stretches), with a threshold
    /// drawn inside, above or below the curve.
    static let cases = zip(
        zip(Gen.int(in: -20...60), Gen.int(in: 1...110), Gen.uint64()),
        zip(Gen.int(in: 0...4), Gen.int(in: 2...16), Gen.double(in: 0.002...0.2))
    ).map { all -> Case in
        let ((lower, count, seed), (thresholdKind, budget, hint)) = all
        var random = SplitMix64(seed: seed)
        var values: [Double] = []
        var value = 1 + random.unit() * 30
        for _ in 0..<count {
            values.append(value)
            if random.unit() > 0.2 { value *= exp(-random.unit() * 0.08) }
        }
        let threshold: Double
        switch thresholdKind {
        case 0: threshold = values.last! * 0.5  // nothing passes
        case 1: threshold = values.first! * 2  // everything passes
        default: threshold = values[Int(random.unit() * Double(count - 1))] * (0.995 + random.unit() * 0.01)
        }
        let start = lower + Int(random.unit() * Double(count - 1))
        return Case(
            lower: lower, values: values, threshold: threshold, start: start, slopeHint: -hint, maxProbes: budget)
    }

    @Test("never answers a level it did not measure or one over the threshold; stays within the budget")
    func answersAreMeasuredAndPass() async {
        await propertyCheck(count: 300, input: Self.cases) { c in
            var measured: [Int] = []
            let outcome = QualitySearch.lowestPassing(
                levels: c.levels, start: c.start, threshold: c.threshold, logSlope: c.slopeHint,
                maxProbes: c.maxProbes
            ) { level in
                measured.append(level)
                return (c.value(level), level)
            }
            #expect(measured.count <= c.maxProbes, "\(c)")
            #expect(measured.allSatisfy { c.levels.contains($0) }, "\(c)")
            #expect(outcome.probes.map(\.level) == measured, "\(c)")
            if let best = outcome.best {
                #expect(measured.contains(best.level) && best.payload == best.level, "\(c)")
                #expect(c.value(best.level) <= c.threshold, "\(c)")
                // Nothing measured lower passed (the answer is the lowest passing probe).
                #expect(!measured.contains { $0 < best.level && c.value($0) <= c.threshold }, "\(c)")
            } else {
                #expect(!measured.contains { c.value($0) <= c.threshold }, "\(c)")
            }
            // When the top level passes, some passing level is always found (the last probe goes to the top).
            if c.value(c.levels.upperBound) <= c.threshold { #expect(outcome.best != nil, "\(c)") }
        }
    }

    @Test("with a budget as large as the range it finds exactly the model's lowest passing level")
    func unboundedFindsBoundary() async {
        await propertyCheck(count: 300, input: Self.cases) { c in
            let outcome = QualitySearch.lowestPassing(
                levels: c.levels, start: c.start, threshold: c.threshold, logSlope: c.slopeHint,
                maxProbes: c.values.count + 1
            ) { level in (c.value(level), ()) }
            #expect(outcome.best?.level == c.lowestPassing, "\(c)")
        }
    }

    @Test("highestPassing (sizes) finds exactly the model's highest fitting level, known probes reused")
    func highestPassingMatchesModel() async {
        await propertyCheck(count: 300, input: Self.cases) { c in
            // A rising curve: the same values read from the top down.
            let rising = Array(c.values.reversed())
            func value(_ level: Int) -> Double { rising[level - c.lower] }
            let expected = c.levels.last { value($0) <= c.threshold }
            let top = c.levels.upperBound
            var measured: [Int] = []
            let outcome = QualitySearch.highestPassing(
                levels: c.lower...top, start: c.start, threshold: c.threshold, logSlope: -c.slopeHint,
                known: [QualitySearch.Probe(level: top, value: value(top), payload: top)]
            ) { level in
                measured.append(level)
                return (value(level), level)
            }
            #expect(outcome.best?.level == expected, "\(c)")
            #expect(!measured.contains(top), "the known probe was measured again: \(c)")
        }
    }

    /// Hostile numbers never trap: a threshold of 0 (`maxFileSize: 0`, found by the `roundtrip` fuzz target), negative,
    /// infinite or NaN; values of 0, infinity or NaN from the measure; zero, infinite or NaN slope hints. The search
    /// still answers only measured levels inside the range and within the budget.
    @Test("hostile thresholds, values and slopes never trap")
    func hostileNumbersNeverTrap() async {
        let hostile: [Double] = [
            0, -1, .infinity, -.infinity, .nan, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 3,
        ]
        let input = zip(
            zip(Gen.int(in: 0...(hostile.count - 1)), Gen.int(in: 0...(hostile.count - 1))),
            zip(Gen.int(in: 0...(hostile.count - 1)), Gen.int(in: 1...60), Gen.uint64()))
        await propertyCheck(count: 400, input: input) { picks, rest in
            let ((thresholdIndex, slopeIndex), (valueIndex, count, seed)) = (picks, rest)
            var random = SplitMix64(seed: seed)
            let levels = 1...count
            // Values: a falling curve with hostile values mixed in.
            let values = levels.map { level -> Double in
                random.unit() < 0.3 ? hostile[valueIndex] : 40 * exp(-0.05 * Double(level))
            }
            let budget = Int(random.unit() * 8) + 2
            let start = Int(random.unit() * Double(count)) + 1
            var measured: [Int] = []
            let low = QualitySearch.lowestPassing(
                levels: levels, start: start, threshold: hostile[thresholdIndex], logSlope: -hostile[slopeIndex],
                maxProbes: budget
            ) { level in
                measured.append(level)
                return (values[level - 1], level)
            }
            #expect(measured.count <= budget && measured.allSatisfy { levels.contains($0) })
            #expect(low.best.map { measured.contains($0.level) } ?? true)
            let high = QualitySearch.highestPassing(
                levels: levels, start: start, threshold: hostile[thresholdIndex], logSlope: hostile[slopeIndex],
                maxProbes: budget
            ) { level in (values[count - level], level) }
            #expect(high.probes.allSatisfy { levels.contains($0.level) })
        }
    }

    /// When distances really fall log-linearly and the hint is the true slope, interpolation lands next to the
    /// boundary at once: at most three probes (start, the boundary, the level below it).
    @Test("a log-linear curve with the right slope hint takes at most three probes")
    func fewProbesOnLogLinearCurves() async {
        let curves = zip(Gen.int(in: 20...100), Gen.double(in: 0.005...0.05), Gen.double(in: 0.05...0.95))
        await propertyCheck(count: 300, input: zip(curves, Gen.double(in: 0...1))) { curve, startFraction in
            let (count, slope, thresholdFraction) = curve
            let levels = 0...(count - 1)
            func value(_ level: Int) -> Double { 20 * exp(-slope * Double(level)) }
            let threshold = value(Int(thresholdFraction * Double(count - 1))) * 1.0001
            let outcome = QualitySearch.lowestPassing(
                levels: levels, start: Int(startFraction * Double(count - 1)), threshold: threshold, logSlope: -slope,
                maxProbes: 16
            ) { level in (value(level), ()) }
            #expect(outcome.best?.level == levels.first { value($0) <= threshold })
            #expect(outcome.probes.count <= 3, "\(outcome.probes.map(\.level)) for \(count) levels, slope \(slope)")
        }
    }
}

extension SplitMix64 {
    /// A uniform value in 0..<1.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
