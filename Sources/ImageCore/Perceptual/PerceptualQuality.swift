import Foundation

/// Where the process's ``PerceptualMetric`` is registered, and the one search that turns a ``PerceptualTarget``
/// into a quality: what lossy encoders call.
///
/// Registered process-wide like ``ColorConversion``: the coders that search are shared instances that know no
/// manager. Without a registered metric an encode with a target fails (``ImageError/Code/noPerceptualMetric``).
///
/// Threading: the registration sits behind a lock; searches run on the caller's thread, without the lock.
public enum PerceptualQuality {
    private static let storage = Locked<(any PerceptualMetric)?>(nil)

    /// The registered metric, nil when none is (the default: ImageCore has no metric).
    public static var metric: (any PerceptualMetric)? { storage.value }

    /// Registers `metric` for the whole process (replacing any other); nil unregisters.
    public static func register(_ metric: (any PerceptualMetric)?) {
        storage.withLock { $0 = metric }
    }

    /// The registered metric.
    ///
    /// - Throws: ``ImageError`` ``ImageError/Code/noPerceptualMetric`` (stage `encode`) when none is registered.
    public static func requireMetric() throws(ImageError) -> any PerceptualMetric {
        guard let metric else {
            throw ImageError(
                .noPerceptualMetric, stage: .encode,
                message: "a perceptual target needs a registered PerceptualMetric (PerceptualQuality.register, "
                    + "or registerDefaultPlugins(), which registers libjxl's butteraugli)")
        }
        return metric
    }

    /// The distance between `reference` and `candidate` with `metric`.
    ///
    /// - Throws: ``ImageError`` `encodeFailed` when the sizes differ or the metric fails.
    public static func distance(
        from reference: PixelBuffer, to candidate: PixelBuffer, with metric: any PerceptualMetric
    ) throws(ImageError) -> Double {
        guard reference.width == candidate.width, reference.height == candidate.height else {
            throw ImageError(
                .encodeFailed, stage: .encode,
                message: "perceptual metric: candidate \(candidate.width)x\(candidate.height) against reference "
                    + "\(reference.width)x\(reference.height)")
        }
        let value: Double
        do {
            value = try metric.distance(from: reference, to: candidate)
        } catch {
            throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
        }
        guard value.isFinite, value >= 0 else {
            throw ImageError(.encodeFailed, stage: .encode, message: "\(metric.name) returned \(value)")
        }
        return value
    }

    /// Searches the lowest level of an encoder's quality scale whose output, decoded, is within `target` of
    /// `reference`: what an encoder calls for ``ImageEncodeOptions/perceptualTarget``.
    ///
    /// Each probe encodes, decodes and measures once
    /// (``QualitySearch/lowestPassing(levels:start:threshold:logSlope:maxProbes:measure:)`` with
    /// ``PerceptualTarget/maxEncodes`` probes). When no probe meets the target the output of the probe with the
    /// smallest distance is returned (the top level whenever the budget reached it), with
    /// ``PerceptualReport/meetsTarget`` false.
    ///
    /// - Parameters:
    ///   - target: the largest distance allowed, and the search's budget (``PerceptualTarget/maxEncodes``).
    ///   - reference: the pixels the encoder was given, as it encodes them (resized, composited).
    ///   - levels: the encoder's quality levels, higher is better.
    ///   - start: the first level to try: the encoder's estimate for `target`.
    ///   - logSlope: the expected change of log(distance) per level (negative; only its size matters).
    ///   - quality: the 0...1 quality of a level, for the report.
    ///   - metric: the metric to use; nil (the default) uses the registered one.
    ///   - encode: encodes at a level.
    ///   - decode: decodes bytes `encode` made to pixels of the reference's size.
    /// - Throws: ``ImageError`` `noPerceptualMetric` when no metric is registered (before any encode), else
    ///   `encodeFailed` with the cause when an encode, decode or measure fails.
    public static func search(
        _ target: PerceptualTarget, reference: PixelBuffer, levels: ClosedRange<Int>, start: Int,
        logSlope: Double, quality: (Int) -> Double, metric: (any PerceptualMetric)? = nil,
        encode: (Int) throws -> Data, decode: (Data) throws -> PixelBuffer
    ) throws(ImageError) -> PerceptualSearchResult {
        let chosenMetric: any PerceptualMetric
        if let metric { chosenMetric = metric } else { chosenMetric = try requireMetric() }
        let outcome = try QualitySearch.lowestPassing(
            levels: levels, start: start, threshold: target.maxDistance, logSlope: logSlope,
            maxProbes: target.maxEncodes
        ) { (level: Int) throws(ImageError) -> (value: Double, payload: Data) in
            let data: Data
            let decoded: PixelBuffer
            do {
                data = try encode(level)
                decoded = try decode(data)
            } catch {
                throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
            }
            return (try distance(from: reference, to: decoded, with: chosenMetric), data)
        }
        guard let chosen = outcome.best ?? outcome.probes.min(by: { $0.value < $1.value }) else {
            throw ImageError(.encodeFailed, stage: .encode, message: "perceptual search made no encode")
        }
        let report = PerceptualReport(
            target: target, metric: chosenMetric.name, quality: quality(chosen.level), distance: chosen.value,
            encodes: outcome.probes.count)
        return PerceptualSearchResult(data: chosen.payload, level: chosen.level, report: report)
    }
}

/// What a perceptual search chose: the bytes, the level on the encoder's scale, and the report.
public struct PerceptualSearchResult: Sendable {
    /// The chosen encode.
    public let data: Data
    /// Its level on the encoder's scale.
    public let level: Int
    /// What the search did.
    public let report: PerceptualReport
}

/// What a perceptual target cost and chose: for logs, metrics and the service's response headers.
public struct PerceptualReport: Hashable, Sendable {
    /// The target asked for.
    public let target: PerceptualTarget
    /// The metric's name (``PerceptualMetric/name``), or the encoder's own (`jxl-distance`) when it targets the
    /// distance natively.
    public let metric: String
    /// The quality chosen, 0...1 on the encoder's scale (as ``ImageEncodeOptions/quality`` would ask for it).
    public let quality: Double
    /// The measured distance of the chosen output; nil when the encoder targets the distance natively without
    /// measuring (JPEG XL).
    public let distance: Double?
    /// Encodes spent (each with a decode and a metric evaluation when measured).
    public let encodes: Int
    /// True when the measured distance is within the target, false when even the best quality tried missed it;
    /// nil when not measured (JPEG XL aims at the distance with its own butteraugli loop, which bounds a norm
    /// of the error rather than its maximum, so it does not promise the max-norm target).
    public var meetsTarget: Bool? { distance.map { $0 <= target.maxDistance } }

    /// Creates a report (encoders that search on their own, such as a native distance target).
    public init(target: PerceptualTarget, metric: String, quality: Double, distance: Double?, encodes: Int) {
        self.target = target
        self.metric = metric
        self.quality = quality
        self.distance = distance
        self.encodes = encodes
    }
}
