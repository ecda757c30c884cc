/// A quality target by perceived difference: the encoder picks the lowest quality whose decoded output stays within
/// ``maxDistance`` of the pixels it was given.
///
/// The distance is on butteraugli's scale, max norm: the largest local difference anywhere in the image, where
/// about 1 is "just noticeable side by side" and photos at a web quality of 80 land around 4–8 at thumbnail sizes.
/// The metric itself is a plug-in (``PerceptualMetric``, registered with ``PerceptualQuality/register(_:)``; the
/// `JXLCoder` product provides butteraugli through libjxl). An encode with a target and no registered metric fails
/// with ``ImageError/Code/noPerceptualMetric``; it never falls back to the fixed quality.
///
/// Lossy JPEG, WebP and AVIF search their quality scale (at most ``maxEncodes`` encodes, each decoded and measured);
/// JPEG XL encodes to the distance natively, in one encode. ``ImageEncodeOptions/quality`` is not used when a target
/// is set; ``ImageEncodeOptions/maxFileSize`` still caps the size (it lowers the quality below the target's choice
/// when the output does not fit). Lossless encodes ignore the target.
public struct PerceptualTarget: Hashable, Sendable, CustomStringConvertible {
    /// The largest accepted distance (butteraugli, max norm), 0.05...100; NaN becomes 1.
    public let maxDistance: Double
    /// The most encodes one search may spend, 2...16 (default 4). Each costs an encode, a decode and one metric
    /// evaluation; the last one is spent on the top quality when nothing lower met the target, so an output that
    /// meets it is found whenever the format's best quality does.
    public let maxEncodes: Int

    /// Creates a target; values outside the ranges are clamped.
    public init(maxDistance: Double, maxEncodes: Int = 4) {
        self.maxDistance = maxDistance.isNaN ? 1 : min(max(maxDistance, 0.05), 100)
        self.maxEncodes = min(max(maxEncodes, 2), 16)
    }

    /// The target as it belongs in a cache key or a log line: `distance(1.500),encodes(4)` — three fixed decimals,
    /// so equal targets always print alike and different ones never do (distances are kept to that precision by
    /// the search's own comparisons in practice; two targets closer than 0.0005 share a key).
    public var keyDescription: String {
        "distance(\(Self.fixed3(maxDistance))),encodes(\(maxEncodes))"
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
