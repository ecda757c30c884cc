internal import CHEIF
import Foundation
public import ImageCore

/// Decodes HEIC and HEIF (HEVC in HEIF, and other codecs libheif has) and encodes HEIC, with libheif.
///
/// Register it with `CodersManager.shared.addCoder(HEIFCoder.shared)`. It decodes files whose `ftyp` brands say
/// HEIC or HEIF (``/ImageCore/ImageFormat/heic``, ``/ImageCore/ImageFormat/heif``); AVIF files (brands `avif`, `avis`)
/// are left to `AVIFCoder`.
///
/// Decoding returns the primary image: grids assembled, `clap` / `irot` / `imir` applied by default (with
/// ``/ImageCore/ImageDecodeOptions/applyOrientation`` false the stored pixels come back and
/// ``/ImageCore/ImageMetadata/orientation`` tells the rotation and mirror; EXIF orientation is never applied, HEIF's
/// own properties rule), alpha (an auxiliary image) as RGBA, premultiplied only when the file says so, monochrome as
/// gray. Samples deeper than 8 bits are reduced to 8 by libheif, or — when
/// ``/ImageCore/ImageDecodeOptions/convertToSRGB`` applies to an ICC-tagged image — handed at 16 bits to the registered
/// ``/ImageCore/ColorConverter`` first. The ICC profile (`colr` `prof`/`rICC`; an `nclx` description is not turned into
/// a profile) and the EXIF block land in ``/ImageCore/ImageMetadata``. Thumbnails decode at full size, then go through
/// the shared area resampler.
///
/// Image sequences: libheif 1.15 has no sequence API, so a file with a `meta` box decodes as its primary image and
/// a sequence-only file (`msf1` without `meta`) is refused with `badImageData`.
///
/// Hostile input: before libheif runs, the coder parses the `meta` item graph itself and refuses (with
/// `badImageData` naming the cause) reference cycles, references to missing items, grids whose tile count does
/// not match rows × columns or whose tiles are missing, lie outside the file or do not cover the grid, coded
/// items without a size, `ipma` indices past `ipco`, and `clap` with zero denominators — the graphs on which
/// libheif 1.15 loops or fails deep inside. The pixel budget is checked from the primary item's `ispe`, every
/// grid's output and every tile (their sum may be at most twice ``/ImageCore/ImageDecodeOptions/maxPixelCount``)
/// before any decoding: over it, `imageTooLarge`.
///
/// Encoding writes HEIC with libheif's HEVC encoder (x265 in Debian's libheif); ``canEncode(to:)`` is false and
/// ``encode(_:as:options:)`` throws `encodeFailed` when the linked libheif has none (see ``encoders``).
///
/// Threading: thread-safe; each call owns its libheif objects. Calls block: run them on the decode pool.
/// Errors: ``/ImageCore/ImageError`` `badImageData` (``HEIFLibError`` or the container check as the cause),
/// `imageTooLarge`, `encodeFailed`, `noCoder` (a format other than HEIC asked of the encoder).
public final class HEIFCoder: ImageCoder, Sendable {
    /// The shared instance to register (tiles decoded on the calling thread: the SDK decodes on several threads).
    public static let shared = HEIFCoder()

    /// Threads libheif may use to decode the tiles of one grid image; 1 decodes them on the calling thread.
    public let maxThreads: Int

    /// Creates a coder; `maxThreads` above 1 lets one large grid image use several cores, which helps a
    /// command-line tool and hurts a server that already decodes one image per core.
    public init(maxThreads: Int = 1) {
        self.maxThreads = max(1, maxThreads)
    }

    /// One encoder the linked libheif offers.
    public struct Encoder: Hashable, Sendable {
        /// The encoder's descriptive name, e.g. `"x265 HEVC encoder (3.5+1-f0c1022b6)"`.
        public let name: String
        /// Its short id, e.g. `"x265"`.
        public let id: String
        /// What it produces: `"HEVC"`, `"AV1"`, `"JPEG"`, … (AV1 in HEIF is AVIF, which this coder does not write).
        public let compression: String
        /// Whether it can encode losslessly.
        public let supportsLossless: Bool
    }

    /// The encoders of the linked libheif (`heif_get_encoder_descriptors`); Debian 12's has x265 (HEVC) and
    /// aom (AV1).
    public static let encoders: [Encoder] = {
        _ = HEIFLibrary.initialized
        var descriptors = [OpaquePointer?](repeating: nil, count: 16)
        let count = Int(heif_get_encoder_descriptors(heif_compression_undefined, nil, &descriptors, 16))
        return descriptors.prefix(max(0, count)).compactMap { descriptor -> Encoder? in
            guard let descriptor else { return nil }
            let compression: String
            switch heif_encoder_descriptor_get_compression_format(descriptor) {
            case heif_compression_HEVC: compression = "HEVC"
            case heif_compression_AV1: compression = "AV1"
            case heif_compression_AVC: compression = "AVC"
            case heif_compression_JPEG: compression = "JPEG"
            case heif_compression_JPEG2000: compression = "JPEG2000"
            default: compression = "other"
            }
            return Encoder(
                name: heif_encoder_descriptor_get_name(descriptor).map { String(cString: $0) } ?? "",
                id: heif_encoder_descriptor_get_id_name(descriptor).map { String(cString: $0) } ?? "",
                compression: compression,
                supportsLossless: heif_encoder_descriptor_supports_lossless_compression(descriptor) != 0)
        }
    }()

    /// True when libheif has an HEVC encoder, so HEIC can be written.
    public static let canEncodeHEIC: Bool = encoders.contains { $0.compression == "HEVC" }

    /// The linked libheif version, e.g. `"1.15.1"`.
    public static var libraryVersion: String { String(cString: heif_get_version()) }

    // MARK: ImageCoder

    /// True when the `ftyp` brands say HEIC or HEIF (not AVIF).
    public func canDecode(_ data: Data) -> Bool {
        let format = ImageFormat.detect(data)
        return format == .heic || format == .heif
    }

    /// True for ``/ImageCore/ImageFormat/heic`` when libheif has an HEVC encoder.
    public func canEncode(to format: ImageFormat) -> Bool { format == .heic && Self.canEncodeHEIC }

    /// The primary item's stored (`ispe`) size from the coder's own container walk; nil when the container is not
    /// complete and valid yet (a prefix, a damaged file: ``decode(_:options:)`` then says why).
    public func probe(_ data: Data) -> ImageProperties? {
        guard canDecode(data) else { return nil }
        return data.withUnsafeBytes { bytes -> ImageProperties? in
            guard let (_, primary) = try? HEIFDecoder.inspect(bytes, maxPixelCount: .max) else { return nil }
            return ImageProperties(
                format: ImageFormat.detect(data) ?? .heic, width: primary.storedSize.width,
                height: primary.storedSize.height, frameCount: 1)
        }
    }

    /// Decodes the primary image of `data` per `options`.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` (a malformed container, libheif's error) or `imageTooLarge`.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        let format = ImageFormat.detect(data)
        guard format == .heic || format == .heif else {
            throw ImageError(.badImageData, stage: .decode, message: "not a HEIF file (no HEIC/HEIF ftyp brand)")
        }
        return try HEIFDecoder.decode(data, options: options, maxThreads: maxThreads, format: format ?? .heic)
    }

    /// Encodes the first frame of `image` as HEIC; see ``HEIFCoder`` for what is written.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `noCoder` for another format, `encodeFailed` (no HEVC encoder, or libheif's
    ///   error).
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .heic else {
            throw ImageError(.noCoder, stage: .encode, message: "HEIFCoder cannot encode \(format)")
        }
        return try HEIFEncoder.encode(image, options: options)
    }
}
