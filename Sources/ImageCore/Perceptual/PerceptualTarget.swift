/// A quality target by perceived difference: the encoder picks the lowest quality whose decoded output stays within
/// ``maxDistance`` of the pixels it was given.
///
/// The distance is on butteraugli's scale, max norm: the largest local difference anywhere in the image, where
/// about 1 is "just noticeable side by side" and photos at a web quality of 80 land around 2–6 at thumbnail sizes
/// (JPEG and WebP median about 3, AVIF about 2, on the corpus photos at 256 and 512 px).
/// The metric itself is a plug-in (``PerceptualMetric``, registered with ``PerceptualQuality/register(_:)``; the
/// `JXLCoder` product provides butteraugli through libjxl). An encode with a target and no registered metric fails
/// with ``ImageError/Code/noPerceptualMetric``; it never falls back to the fixed quality.
///
/// Lossy JPEG, WebP and AVIF search their quality scale (at most ``maxEncodes`` encodes, each decoded and measured;
/// a JPEG whose subsampling the coder chooses may spend as many again at 4:4:4 when 4:2:0 cannot meet the target);
/// JPEG XL encodes to the distance natively, in one encode. ``ImageEncodeOptions/quality`` is not used when a target
/// is set; ``ImageEncodeOptions/maxFileSize`` still caps the size (it lowers the quality below the target's choice
/// when the output does not fit). Lossless encodes ignore the target.
public struct PerceptualTarget: Hashable, Sendable, CustomStringConvertible {
    /// The largest accepted distance (butteraugli, max norm), 0.05...100; NaN becomes 1.
    public let maxDistance: Double
    /// The most encodes one search may spend, 2...16 (default 4). Each costs an encode, a decode and one metric
    /// evaluation; the last one is spent on the top quality allowed (``maxQuality``) when nothing lower met the
    /// target, so an output that meets it is found whenever that quality does.
    public let maxEncodes: Int

    /// The highest quality the search may choose, 0.01...1 (default 1: the format's best). A service replacing a
    /// fixed quality sets that quality here: the output then never costs more bytes than the fixed quality's, and
    /// an image that needs more to meet the target gets the ceiling (reported as missing the target).
    public let maxQuality: Double

    /// Creates a target; values outside the ranges are clamped (NaN `maxQuality` becomes 1).
    public init(maxDistance: Double, maxEncodes: Int = 4, maxQuality: Double = 1) {
        self.maxDistance = maxDistance.isNaN ? 1 : min(max(maxDistance, 0.05), 100)
        self.maxEncodes = min(max(maxEncodes, 2), 16)
        self.maxQuality = maxQuality.isNaN ? 1 : min(max(maxQuality, 0.01), 1)
    }

    /// The target as it belongs in a cache key or a log line: `distance(1.500),encodes(4)`, with `,max(0.800)` when
    /// the quality is capped — three fixed decimals, so equal targets always print alike and different ones never
    /// do (two targets closer than 0.0005 share a key).
    public var keyDescription: String {
        "distance(\(Self.fixed3(maxDistance))),encodes(\(maxEncodes))"
            + (maxQuality < 1 ? ",max(\(Self.fixed3(maxQuality)))" : "")
    }

    /// The highest level of an encoder's scale `levels` that ``maxQuality`` allows, where the scale's top is
    /// quality 1 and `perUnit` levels make quality 1 (JPEG and WebP 100, AVIF 63).
    public func topLevel(of levels: ClosedRange<Int>, perUnit: Int) -> Int {
        min(levels.upperBound, max(levels.lowerBound, Int((maxQuality * Double(perUnit)).rounded())))
    }

    /// ``keyDescription``.
    public var description: String { keyDescription }

    /// `value` with exactly three decimals, independent of locale.
    static func fixed3(_ value: Double) -> String {
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
