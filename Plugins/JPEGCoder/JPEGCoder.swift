import Foundation
public import ImageCore

/// Decodes and encodes JPEG with the system libjpeg-turbo through its TurboJPEG API.
///
/// Register it with `CodersManager.shared.addCoder(JPEGCoder.shared)`.
///
/// Decoding handles baseline, progressive, arithmetic-coded, restart-marker, grayscale and CMYK/YCCK JPEGs in every
/// subsampling. Output is gray8 for grayscale files and RGB8 otherwise (CMYK/YCCK converted to RGB); JPEG has no
/// alpha. The EXIF orientation is applied by default (pixels rotated/flipped, `metadata.orientation == .up`,
/// `metadata.sourceOrientation` the file's value); with ``/ImageCore/ImageDecodeOptions/applyOrientation`` false the
/// raw pixels are kept and `metadata.orientation` reports the EXIF value. The ICC profile (APP2 chunks reassembled)
/// and the EXIF block go to ``/ImageCore/ImageMetadata``. Thumbnails and scale-down use libjpeg-turbo's DCT scaling
/// (1/8 to 1) to the smallest size that still covers the target, then an area-average resample to the exact size, so a
/// 12 MP photo never decodes at full size to make 256 px. Recoverable corruption (truncated data, extraneous bytes)
/// decodes with libjpeg's warnings ignored, as djpeg does; fatal errors throw. Data that ends before the EOI
/// marker (a cut download: libjpeg fills in the missing area) gives an image marked
/// ``/ImageCore/ImageMetadata/isIncomplete``.
///
/// Threading: stateless and `Sendable`; every call owns its TurboJPEG handle, so calls may run concurrently. Calls
/// block: use a decode pool, not the cooperative pool.
/// Errors: ``/ImageCore/ImageError`` `badImageData`, `imageTooLarge` (checked from the header before allocating) or
/// `encodeFailed`, with TurboJPEG's message as the underlying ``JPEGLibraryError``.
public final class JPEGCoder: ProgressiveImageCoder, ReportingImageCoder, Sendable {
    /// The shared instance to register with ``/ImageCore/CodersManager``.
    public static let shared = JPEGCoder()

    /// Creates a coder; it holds no state, so ``shared`` is usually enough.
    public init() {}

    /// True when `data` starts with the JPEG SOI marker followed by another marker (FF D8 FF).
    public func canDecode(_ data: Data) -> Bool {
        data.count >= 3 && data[data.startIndex] == 0xFF && data[data.startIndex + 1] == 0xD8
            && data[data.startIndex + 2] == 0xFF
    }

    /// Decodes `data`, honouring the budget, thumbnail, scale-down and orientation options.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `imageTooLarge` when the header exceeds `options.maxPixelCount`, else
    ///   `badImageData`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        try JPEGDecoder.decode(data, options: options)
    }

    /// True for ``/ImageCore/ImageFormat/jpeg``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .jpeg }

    /// Encodes the first frame of `image` as JPEG (quality, progressive, subsampling, background for alpha,
    /// max pixel size, max file size by a quality search).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `noCoder` for another format, `encodeFailed` when libjpeg-turbo fails.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .jpeg else {
            throw ImageError(.noCoder, stage: .encode, message: "JPEGCoder cannot encode \(format)")
        }
        return try JPEGEncoder.encode(image, options: options).data
    }

    /// ``encode(_:as:options:)``, reporting the quality used (chosen by a
    /// ``/ImageCore/ImageEncodeOptions/perceptualTarget`` or lowered by `maxFileSize`) and the perceptual search's
    /// report.
    ///
    /// - Throws: as ``encode(_:as:options:)``; `noPerceptualMetric` for a target without a registered metric.
    public func encodeReporting(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        guard format == .jpeg else {
            throw ImageError(.noCoder, stage: .encode, message: "JPEGCoder cannot encode \(format)")
        }
        return try JPEGEncoder.encode(image, options: options)
    }

    /// Reads the stored size from the header (`tjDecompressHeader3`); nil when the header is unreadable.
    public func probe(_ data: Data) -> ImageProperties? {
        data.withUnsafeBytes { bytes -> ImageProperties? in
            guard let tj = try? TurboJPEG.decompressor(), let header = try? tj.header(bytes) else { return nil }
            return ImageProperties(format: .jpeg, width: header.width, height: header.height, frameCount: 1)
        }
    }

    /// True once the prefix shows the JPEG signature.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// Creates a decoder fed with a growing prefix: ImageCore's ``/ImageCore/IncrementalDecoder`` with JPEG's step,
    /// which previews each completed scan of a progressive JPEG and a baseline JPEG's rows in 25% steps of bytes.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        IncrementalDecoder(options: options, step: JPEGIncrementalStep(options: options))
    }
}
