/// Measures how different a candidate image looks from its reference: the hook behind
/// ``ImageEncodeOptions/perceptualTarget``.
///
/// ImageCore has no metric of its own (it stays free of C libraries); a plugin implements this protocol — the
/// `JXLCoder` product's `ButteraugliMetric` on libjxl — and is registered with ``PerceptualQuality/register(_:)``.
/// Distances are on butteraugli's scale, max norm (see ``PerceptualTarget``).
///
/// Threading: called from the encode pool, concurrently from several threads; implementations must be
/// thread-safe and may block. Errors: throw ``ImageError``; other errors are wrapped as `encodeFailed`.
public protocol PerceptualMetric: Sendable {
    /// A short stable name for logs and keys, e.g. `butteraugli`.
    var name: String { get }

    /// The distance between `reference` and `candidate` (0 for identical pixels, larger is worse).
    ///
    /// Both buffers have the same width and height (``PerceptualQuality`` checks before it calls); layouts and
    /// alpha modes may differ (a gray JPEG's decode against its gray source, a decoded RGBA against a premultiplied
    /// source): compare what the pixels show.
    func distance(from reference: PixelBuffer, to candidate: PixelBuffer) throws -> Double
}

extension ImageError.Code {
    /// An encode asked for a ``PerceptualTarget`` but no ``PerceptualMetric`` is registered
    /// (``PerceptualQuality/register(_:)``; `registerDefaultPlugins()` registers libjxl's butteraugli). Stage
    /// `encode`, raised before any encode: by a coder's encode with a target, by
    /// ``PerceptualQuality/search(_:reference:levels:start:logSlope:quality:metric:encode:decode:)`` and by
    /// ``PerceptualQuality/requireMetric()``.
    public static let noPerceptualMetric = ImageError.Code("noPerceptualMetric")
}
