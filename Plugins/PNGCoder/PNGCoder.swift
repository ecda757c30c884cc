import Foundation
public import ImageCore

/// Decodes and encodes PNG with the system libpng (1.6).
///
/// Register it with `CodersManager.shared.addCoder(PNGCoder.shared)`.
///
/// Decoding uses libpng's simplified API, which returns status codes (no longjmp). Every colour type and bit
/// depth is supported: output is RGBA8 with straight alpha when the image has alpha (alpha channel or tRNS),
/// RGB8 for colour and palette images, gray8 for gray ones; 16-bit samples are reduced to 8 bits; gAMA, sRGB and
/// cHRM are resolved by libpng to sRGB; the iCCP profile and eXIf bytes go to ``ImageMetadata``. APNG: Debian's
/// libpng 1.6.39 has no APNG support, so an APNG decodes as its default image (one frame). PNG orientation
/// (eXIf) is reported in `metadata.exif` but not applied.
///
/// The pixel budget is checked against the IHDR size read by this coder before libpng allocates anything.
/// Thumbnails and scale-down shrink while decoding: rows are read a strip at a time and area-averaged into the
/// thumbnail as they come, so a 12 MP PNG never sits in memory at full size (interlaced files, whose rows are only
/// complete after the last pass, decode in full and are then area-averaged). Either way the pixels are exactly
/// the full decode's, area-averaged.
///
/// Threading: stateless and `Sendable`; decode and encode may run concurrently from any threads and block the
/// calling thread, so call them from a decode pool, not the cooperative pool.
/// Errors: ``ImageError`` with `badImageData`, `imageTooLarge` (decode) or `encodeFailed`; the libpng message is the
/// underlying ``PNGLibraryError``.
public final class PNGCoder: ProgressiveImageCoder, Sendable {
    /// The shared instance to register with ``CodersManager``.
    public static let shared = PNGCoder()

    /// Creates a coder; it holds no state, so ``shared`` is usually enough.
    public init() {}

    /// True when `data` starts with the 8-byte PNG signature.
    public func canDecode(_ data: Data) -> Bool {
        data.withUnsafeBytes { PNGChunks.hasSignature($0) }
    }

    /// Decodes the (default) image of `data`.
    ///
    /// - Throws: ``ImageError`` `imageTooLarge` when IHDR exceeds `options.maxPixelCount`, `badImageData` otherwise.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        try PNGDecoder.decode(data, options: options)
    }

    /// True for ``ImageFormat/png``.
    public func canEncode(to format: ImageFormat) -> Bool { format == .png }

    /// Encodes the first frame of `image` as PNG; see ``ImageEncodeOptions/effort`` for the speed trade-off.
    ///
    /// `.fast` is zlib level 1 with one filter (use it wherever the SDK encodes on its own), `.balanced` libpng's
    /// default, `.best` zlib 9 with every filter; `progressive` writes Adam7.
    /// - Throws: ``ImageError`` `noCoder` for another format, `encodeFailed` when libpng fails.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .png else {
            throw ImageError(.noCoder, stage: .encode, message: "PNGCoder cannot encode \(format)")
        }
        return try PNGEncoder.encode(image, options: options)
    }

    /// Reads the size from IHDR without libpng; nil when the signature or IHDR is missing.
    public func probe(_ data: Data) -> ImageProperties? {
        guard let chunks = PNGChunks.read(data, scanAll: false) else { return nil }
        return ImageProperties(format: .png, width: chunks.width, height: chunks.height, frameCount: 1)
    }

    /// True once the prefix shows the PNG signature.
    public func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }

    /// Creates a decoder fed with a growing prefix (libpng's progressive reader); see ``IncrementalImageDecoder``.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        PNGIncrementalDecoder(options: options)
    }
}
