import Foundation

/// Encoded bytes with what the encoder chose: the answer of
/// ``ImageCoder/encodeWithReport(_:as:options:)``.
public struct EncodedImage: Sendable {
    /// The encoded bytes (exactly what ``ImageCoder/encode(_:as:options:)`` returns for the same call).
    public let data: Data
    /// The quality the bytes were encoded at, 0...1: the requested ``ImageEncodeOptions/quality``, the one a
    /// perceptual search chose, or the one ``ImageEncodeOptions/maxFileSize`` lowered it to; nil for lossless
    /// encodes and formats without a quality.
    public let quality: Double?
    /// What the perceptual search did; nil when no ``ImageEncodeOptions/perceptualTarget`` was set, the encode
    /// was lossless, or the coder does not support targets (it does not conform to ``ReportingImageCoder``).
    public let perceptual: PerceptualReport?

    /// Creates the answer.
    public init(data: Data, quality: Double?, perceptual: PerceptualReport? = nil) {
        self.data = data
        self.quality = quality
        self.perceptual = perceptual
    }
}

/// A coder that tells what it chose while encoding: the quality, and the perceptual search's report.
///
/// Coders that honour ``ImageEncodeOptions/perceptualTarget`` conform (the SDK's JPEG, WebP, AVIF and JPEG XL
/// coders, and ``CodersManager``); callers use ``ImageCoder/encodeWithReport(_:as:options:)``, which works with
/// any coder. Same threading and error contract as ``ImageCoder/encode(_:as:options:)``.
public protocol ReportingImageCoder: ImageCoder {
    /// Encodes `image` to `format` and reports what was chosen.
    func encodeReporting(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> EncodedImage
}

extension ImageCoder {
    /// Encodes `image` and reports the quality chosen: one call for a service that logs `q=auto`'s choice.
    ///
    /// A ``ReportingImageCoder`` answers itself; any other coder encodes with ``encode(_:as:options:)`` and
    /// reports the requested quality and no perceptual report (so a caller can tell a target was not applied).
    public func encodeWithReport(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        if let reporting = self as? any ReportingImageCoder {
            return try reporting.encodeReporting(image, as: format, options: options)
        }
        return EncodedImage(
            data: try encode(image, as: format, options: options), quality: options.lossless ? nil : options.quality)
    }
}
