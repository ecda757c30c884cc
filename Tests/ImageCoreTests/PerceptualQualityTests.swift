import Foundation
import ImageCore
import Testing

/// ``PerceptualQuality``'s search through a scripted encoder and metric: what it reports, and each failure as a
/// typed error. Serialized: one test checks the process-wide registration, and the others must not see it.
@Suite("Perceptual quality", .serialized)
struct PerceptualQualityTests {
    /// A metric that reads the level an encode wrote into the first byte of its pixels and looks up its distance.
    struct ScriptedMetric: PerceptualMetric {
        let distances: [Int: Double]
        var name: String { "scripted" }
        func distance(from reference: PixelBuffer, to candidate: PixelBuffer) throws -> Double {
            let level = Int(candidate.bytes[0])
            guard let distance = distances[level] else { throw ScriptedError(level: level) }
            return distance
        }
    }

    struct ScriptedError: Error { let level: Int }

    static let reference = PixelBuffer(width: 4, height: 3, layout: .rgb8)

    /// Encodes a level as one byte; decodes it into a buffer of the reference's size whose first byte is the level.
    static func encode(_ level: Int) -> Data { Data([UInt8(level)]) }
    static func decode(_ data: Data) -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: 4 * 3 * 3)
        bytes[0] = data[data.startIndex]
        return PixelBuffer(width: 4, height: 3, layout: .rgb8, bytes: bytes)
    }

    /// Distances that fall from 12 at level 0 to about 1.2 at level 100 (a photo's JPEG curve, roughly).
    static let curve = Dictionary(uniqueKeysWithValues: (0...100).map { ($0, 12 * exp(-0.023 * Double($0))) })

    func search(
        _ target: PerceptualTarget, metric: any PerceptualMetric = ScriptedMetric(distances: curve), start: Int = 50,
        decode: @escaping (Data) throws -> PixelBuffer = PerceptualQualityTests.decode
    ) throws -> PerceptualSearchResult {
        try PerceptualQuality.search(
            target, reference: Self.reference, levels: 0...100, start: start, logSlope: -0.02,
            quality: { Double($0) / 100 }, metric: metric, encode: Self.encode, decode: decode)
    }

    @Test("reports the chosen level's quality, its measured distance and the encodes spent")
    func reportsTheChoice() throws {
        let target = PerceptualTarget(maxDistance: 3)
        let result = try search(target)
        let lowest = (0...100).first { Self.curve[$0]! <= 3 }!
        #expect(result.level == lowest)
        #expect(result.data == Self.encode(lowest))
        #expect(result.report.quality == Double(lowest) / 100)
        #expect(result.report.distance == Self.curve[lowest])
        #expect(result.report.meetsTarget == true)
        #expect(result.report.metric == "scripted")
        #expect((2...target.maxEncodes).contains(result.report.encodes))
        #expect(result.report.target == target)
    }

    @Test("a target no level meets returns the best probe (the top level) and says it missed")
    func unreachableTarget() throws {
        let result = try search(PerceptualTarget(maxDistance: 0.5, maxEncodes: 3))
        #expect(result.level == 100)
        #expect(result.report.meetsTarget == false)
        #expect(result.report.encodes <= 3)  // it stops as soon as the top level fails
    }

    @Test("a metric's failure, a bad distance and a wrong-sized decode are encodeFailed with the cause")
    func failuresAreTyped() throws {
        let failing = ScriptedMetric(distances: [:])
        let error = try #require(throws: ImageError.self) {
            try search(PerceptualTarget(maxDistance: 3), metric: failing)
        }
        #expect(error.code == .encodeFailed && error.stage == .encode)
        #expect(error.underlying != nil)
        let nan = ScriptedMetric(distances: Dictionary(uniqueKeysWithValues: (0...100).map { ($0, Double.nan) }))
        #expect(throws: ImageError.self) { try search(PerceptualTarget(maxDistance: 3), metric: nan) }
        let wrongSize = try #require(throws: ImageError.self) {
            try search(PerceptualTarget(maxDistance: 3)) { _ in PixelBuffer(width: 2, height: 2, layout: .rgb8) }
        }
        #expect(wrongSize.code == .encodeFailed)
    }

    @Test("without a registered metric a target fails with noPerceptualMetric before any encode; registering fixes it")
    func registration() throws {
        // ImageCore registers nothing itself; another target's suite may have registered a metric when suites of
        // several targets share a process (`make test` runs each target alone), so start from none and restore.
        let saved = PerceptualQuality.metric
        PerceptualQuality.register(nil)
        defer { PerceptualQuality.register(saved) }
        var encodes = 0
        let error = try #require(throws: ImageError.self) {
            try PerceptualQuality.search(
                PerceptualTarget(maxDistance: 3), reference: Self.reference, levels: 0...100, start: 50,
                logSlope: -0.02, quality: { Double($0) / 100 },
                encode: {
                    encodes += 1
                    return Self.encode($0)
                }, decode: Self.decode)
        }
        #expect(error.code == .noPerceptualMetric && error.stage == .encode)
        #expect(encodes == 0)
        PerceptualQuality.register(ScriptedMetric(distances: Self.curve))
        #expect(PerceptualQuality.metric?.name == "scripted")
        let result = try PerceptualQuality.search(
            PerceptualTarget(maxDistance: 3), reference: Self.reference, levels: 0...100, start: 50, logSlope: -0.02,
            quality: { Double($0) / 100 }, encode: Self.encode, decode: Self.decode)
        #expect(result.report.meetsTarget == true)
    }

    @Test("targets clamp their values and print the same key for equal targets, different keys otherwise")
    func targetValues() {
        #expect(PerceptualTarget(maxDistance: .nan).maxDistance == 1)
        #expect(PerceptualTarget(maxDistance: -3).maxDistance == 0.05)
        #expect(PerceptualTarget(maxDistance: 1e9).maxDistance == 100)
        #expect(PerceptualTarget(maxDistance: 2, maxEncodes: 0).maxEncodes == 2)
        #expect(PerceptualTarget(maxDistance: 2, maxEncodes: 99).maxEncodes == 16)
        #expect(PerceptualTarget(maxDistance: 1.5).keyDescription == "distance(1.500),encodes(4)")
        #expect(PerceptualTarget(maxDistance: 0.05, maxEncodes: 16).keyDescription == "distance(0.050),encodes(16)")
        #expect(
            PerceptualTarget(maxDistance: 2, maxQuality: 0.8).keyDescription == "distance(2.000),encodes(4),max(0.800)")
        #expect(PerceptualTarget(maxDistance: 2, maxQuality: .nan).maxQuality == 1)
        var seen: [String: PerceptualTarget] = [:]
        for thousandths in stride(from: 50, through: 20_000, by: 7) {
            for encodes in [2, 4, 9] {
                let target = PerceptualTarget(maxDistance: Double(thousandths) / 1000, maxEncodes: encodes)
                #expect(seen.updateValue(target, forKey: target.keyDescription) == nil, "\(target)")
            }
        }
        var options = ImageEncodeOptions(quality: 0.8)
        let fixed = options
        options.perceptualTarget = PerceptualTarget(maxDistance: 2)
        #expect(options != fixed)
    }
}
