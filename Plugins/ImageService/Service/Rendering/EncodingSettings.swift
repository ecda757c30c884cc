import ImageCore
import ImageServiceQuery

/// The server's output settings: quality and effort per format, progressive JPEG, `q=auto`'s distances. Every
/// one of them changes the bytes of a thumbnail, so all of them are part of every result key and entity tag
/// (``fingerprint``). Value type; thread-safe.
struct EncodingSettings: Sendable, Equatable {
    /// Default quality 1...100 per format (JPEG, WebP, AVIF; PNG and GIF are lossless here).
    var quality: [ImageFormat: Int]
    /// Encoder effort per format; formats not listed use `.balanced`.
    var effort: [ImageFormat: EncodeEffort]
    /// Progressive JPEG.
    var progressiveJPEG: Bool
    /// `q=auto`'s butteraugli distance per format; a format not listed encodes at its fixed quality.
    var perceptualDistance: [ImageFormat: Double] = [:]

    /// The server's defaults: quality 80 for JPEG and WebP, 60 for AVIF (imgproxy's and thumbor's neighbourhood);
    /// every format at `.balanced` effort (``ImageServiceConfiguration/effort`` overrides it).
    static let defaults = EncodingSettings(
        quality: [.jpeg: 80, .webp: 80, .avif: 60], effort: [:], progressiveJPEG: false)

    /// The encoder options for `format`: the request's quality when it gave one; with `auto`, a perceptual target
    /// at the format's distance, capped at the format's default quality (a search never spends more bytes than the
    /// fixed default would: the benchmark's capped rows, 0.89–0.99× of q 80's bytes).
    func options(for format: ImageFormat, quality requested: Int?, auto: Bool, animated: Bool) -> ImageEncodeOptions {
        let fixed = Double(requested ?? quality[format] ?? 80) / 100
        var options = ImageEncodeOptions(
            quality: fixed, effort: effort[format] ?? .balanced, progressive: format == .jpeg && progressiveJPEG,
            firstFrameOnly: !animated)
        if auto, let distance = perceptualDistance[format] {
            options.perceptualTarget = PerceptualTarget(maxDistance: distance, maxQuality: fixed)
        }
        return options
    }

    /// Every setting in one canonical text (formats sorted; an effort of `.balanced`, the default, left out): equal
    /// texts mean equal output for equal pixels. A part of result keys and entity tags, so a change of settings is a
    /// result-cache miss and a new ETag, and replicas of a fleet configured differently never share results.
    var fingerprint: String {
        func list<Value>(_ values: [ImageFormat: Value]) -> String {
            values.map { "\($0.key.rawValue)=\($0.value)" }.sorted().joined(separator: ",")
        }
        return "quality \(list(quality)); effort \(list(effort.filter { $0.value != .balanced })); "
            + "progressive \(progressiveJPEG); distance \(list(perceptualDistance))"
    }
}

extension EncodingSettings {
    /// The settings `configuration` gives: ``defaults``, then its quality (clamped to 1...100), effort, progressive
    /// JPEG and `q=auto` distances (finite and above 0).
    init(_ configuration: ImageServiceConfiguration) {
        self = .defaults
        for (format, value) in configuration.quality { quality[format] = min(100, max(1, value)) }
        for (format, value) in configuration.effort { effort[format] = value }
        progressiveJPEG = configuration.progressiveJPEG
        perceptualDistance = configuration.perceptualDistance.filter { $0.value.isFinite && $0.value > 0 }
    }
}
