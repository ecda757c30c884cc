/// Where the process's ``ColorConverter`` is registered, and the one function that applies
/// ``ImageDecodeOptions/convertToSRGB`` to a decoded image.
///
/// The conversion runs in ``CodersManager``, after whichever coder decoded the bytes (and again for progressive
/// previews, images a loader produced, and every frame an animation decodes later): one place covers every coder,
/// third-party ones included, and a coder needs no colour code of its own. Coders convert themselves only where
/// an 8-bit ``PixelBuffer`` would lose what the converter needs — CMYK, and samples deeper than 8 bits — through
/// ``ColorSamples``, and then leave no profile behind, so the conversion never runs twice.
///
/// After a conversion the pixels are sRGB and ``ImageMetadata/iccProfile`` is nil (the SDK's meaning of "sRGB":
/// an encoder then embeds nothing). Without a registered converter the option changes nothing (pixels and profile
/// are carried as decoded), so registering one is part of turning it on.
///
/// Threading: the registration sits behind a lock; conversions run on the caller's thread, without the lock.
public enum ColorConversion {
    private static let storage = Locked<(any ColorConverter)?>(nil)

    /// The registered converter, nil when none is (the default: ImageCore has no colour engine).
    public static var converter: (any ColorConverter)? { storage.value }

    /// Registers `converter` for the whole process (replacing any other); nil unregisters.
    public static func register(_ converter: (any ColorConverter)?) {
        storage.withLock { $0 = converter }
    }

    /// Applies `options.convertToSRGB` to `image`: every held frame is converted, frames an animation decodes
    /// later are converted as they come, and the profile is dropped. Returns `image` unchanged when the option
    /// is off, the image has no profile, or no converter is registered.
    ///
    /// - Throws: ``ImageError`` `badImageData` (stage `decode`) when the converter refuses the profile.
    public static func apply(to image: Image, options: ImageDecodeOptions) throws(ImageError) -> Image {
        guard options.convertToSRGB, image.metadata.iccProfile != nil, let converter else { return image }
        return try convert(image, with: converter)
    }

    /// Converts `image` to sRGB with `converter` (for images decoded outside ``CodersManager``); an image without
    /// a profile is returned as it is.
    ///
    /// A profile whose colour space does not fit the pixels (a CMYK profile on RGB pixels a coder made without a
    /// converter, a damaged header) cannot describe them: the pixels are kept and the profile dropped.
    /// - Throws: ``ImageError`` `badImageData` (stage `decode`) when the converter refuses the profile.
    public static func convert(_ image: Image, with converter: any ColorConverter) throws(ImageError) -> Image {
        guard let profile = image.metadata.iccProfile else { return image }
        var metadata = image.metadata
        metadata.iccProfile = nil
        guard ICCProfileHeader(profile)?.colorModel?.fits(image.pixels.layout) == true else {
            return image.with(metadata: metadata)
        }
        let frames = try image.frames.map { (frame) throws(ImageError) -> ImageFrame in
            ImageFrame(
                pixels: try convert(frame.pixels, profile: profile, with: converter), duration: frame.duration)
        }
        let provider = image.animatedProvider.map {
            ColorConvertingProvider(inner: $0, profile: profile, converter: converter) as any AnimatedImageProvider
        }
        return Image(
            frames: frames, frameCount: image.frameCount, loopCount: image.loopCount, format: image.format,
            metadata: metadata, animatedProvider: provider, animationBudget: image.animationBudget)
    }

    static func convert(
        _ pixels: PixelBuffer, profile: [UInt8], with converter: any ColorConverter
    ) throws(ImageError) -> PixelBuffer {
        do {
            return try converter.convertToSRGB(pixels, iccProfile: profile)
        } catch {
            throw ImageError.wrap(error, as: .badImageData, stage: .decode)
        }
    }
}

/// Converts each frame of an on-demand animation as it is decoded.
struct ColorConvertingProvider: AnimatedImageProvider {
    let inner: any AnimatedImageProvider
    let profile: [UInt8]
    let converter: any ColorConverter

    var frameCount: Int { inner.frameCount }
    var loopCount: Int { inner.loopCount }
    var canvasSize: PixelSize { inner.canvasSize }
    var retainedByteCount: Int { inner.retainedByteCount }
    func duration(at index: Int) -> Double { inner.duration(at: index) }

    func frame(at index: Int) throws -> ImageFrame {
        let frame = try inner.frame(at: index)
        return ImageFrame(
            pixels: try ColorConversion.convert(frame.pixels, profile: profile, with: converter),
            duration: frame.duration)
    }
}

/// The fixed 128-byte header of an ICC profile: what its colours are, read without a colour engine.
public struct ICCProfileHeader: Hashable, Sendable {
    /// The data colour space signature, e.g. `"RGB "`, `"GRAY"`, `"CMYK"`.
    public let colorSpace: String
    /// The profile class signature, e.g. `"mntr"` (display), `"prtr"` (output), `"scnr"` (input).
    public let profileClass: String
    /// The profile's size as its header declares it.
    public let declaredSize: Int

    /// The colour model of ``colorSpace``, nil for other spaces (Lab, XYZ, n-colour).
    public var colorModel: ColorModel? {
        switch colorSpace {
        case "RGB ": .rgb
        case "GRAY": .gray
        case "CMYK": .cmyk
        default: nil
        }
    }

    /// Parses the header; nil when `bytes` is shorter than 128 bytes or lacks the `acsp` signature.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 128, bytes[36] == 0x61, bytes[37] == 0x63, bytes[38] == 0x73, bytes[39] == 0x70 else {
            return nil
        }
        declaredSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        profileClass = String(decoding: bytes[12..<16], as: UTF8.self)
        colorSpace = String(decoding: bytes[16..<20], as: UTF8.self)
    }
}

extension ColorModel {
    /// Whether pixels of `layout` can be in this colour model.
    func fits(_ layout: PixelLayout) -> Bool {
        switch self {
        case .rgb: layout == .rgb8 || layout == .rgba8
        case .gray: layout == .gray8 || layout == .grayAlpha8
        case .cmyk: false
        }
    }
}

extension ImageMetadata {
    /// The ICC profile an encoder should embed for pixels of `layout`: ``iccProfile``, unless its header names a
    /// colour space that cannot describe them (a CMYK profile describes no RGB pixels: an encoder writing it
    /// would mislabel them, and libpng refuses it). Bytes without a readable header are carried verbatim.
    public func iccProfile(for layout: PixelLayout) -> [UInt8]? {
        guard let iccProfile, !iccProfile.isEmpty else { return nil }
        guard let header = ICCProfileHeader(iccProfile) else { return iccProfile }
        return header.colorModel?.fits(layout) == true ? iccProfile : nil
    }
}
