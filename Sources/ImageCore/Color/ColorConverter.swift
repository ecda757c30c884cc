/// The colour model of samples a coder hands to a ``ColorConverter``.
public enum ColorModel: Hashable, Sendable {
    /// One luminance channel.
    case gray
    /// Red, green, blue.
    case rgb
    /// Cyan, magenta, yellow, black (print separations, as CMYK JPEGs store them).
    case cmyk

    /// Colour channels per pixel, alpha not counted.
    public var channelCount: Int {
        switch self {
        case .gray: 1
        case .rgb: 3
        case .cmyk: 4
        }
    }
}

/// Pixels that an 8-bit ``PixelBuffer`` cannot hold without losing colour: CMYK, or more than 8 bits a sample.
///
/// Coders build one when ``ImageDecodeOptions/convertToSRGB`` is set, so the converter works from the file's own
/// samples (a 10-bit HEIC is converted before it is reduced to 8 bits; a CMYK JPEG is never first squashed to RGB).
/// A value; 16-bit samples are in the machine's byte order, channels interleaved, alpha last.
public struct ColorSamples: Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// The colour channels' model.
    public let model: ColorModel
    /// 8 or 16.
    public let bitsPerSample: Int
    /// Whether an alpha channel follows the colour channels.
    public let hasAlpha: Bool
    /// How colour relates to alpha (``AlphaMode/none`` without alpha).
    public let alphaMode: AlphaMode
    /// CMYK stored inverted, 0 meaning full ink (Adobe's APP14 convention in JPEG).
    public let isInverted: Bool
    /// Bytes from one row to the next.
    public let bytesPerRow: Int
    /// The samples.
    public let bytes: [UInt8]

    /// Bytes per pixel: channels (alpha included) times bytes per sample.
    public var bytesPerPixel: Int { (model.channelCount + (hasAlpha ? 1 : 0)) * bitsPerSample / 8 }

    /// Creates samples, validating the geometry against the bytes.
    ///
    /// - Throws: ``ImageError`` `badImageData` (stage `decode`) for a depth other than 8 or 16, a non-positive or
    ///   overflowing size, a short row, or too few bytes.
    public init(
        width: Int, height: Int, model: ColorModel, bitsPerSample: Int, hasAlpha: Bool = false,
        alphaMode: AlphaMode = .straight, isInverted: Bool = false, bytesPerRow: Int? = nil, bytes: [UInt8]
    ) throws(ImageError) {
        func invalid(_ why: String) -> ImageError {
            ImageError(.badImageData, stage: .decode, message: "colour samples \(width)x\(height): \(why)")
        }
        guard bitsPerSample == 8 || bitsPerSample == 16 else { throw invalid("\(bitsPerSample) bits a sample") }
        guard width > 0, height > 0, width <= PixelBuffer.maximumDimension, height <= PixelBuffer.maximumDimension
        else { throw invalid("bad size") }
        let pixelBytes = (model.channelCount + (hasAlpha ? 1 : 0)) * bitsPerSample / 8
        let (row, o1) = width.multipliedReportingOverflow(by: pixelBytes)
        let stride = bytesPerRow ?? row
        let (total, o2) = stride.multipliedReportingOverflow(by: height)
        guard !o1, !o2, stride >= row else { throw invalid("bad row size") }
        guard bytes.count >= total else { throw invalid("\(bytes.count) bytes for \(total) needed") }
        self.width = width
        self.height = height
        self.model = model
        self.bitsPerSample = bitsPerSample
        self.hasAlpha = hasAlpha
        self.alphaMode = hasAlpha ? alphaMode : .none
        self.isInverted = isInverted
        self.bytesPerRow = stride
        self.bytes = bytes
    }
}

/// Converts pixels described by an ICC profile to sRGB: the hook behind ``ImageDecodeOptions/convertToSRGB``.
///
/// ImageCore has no colour engine (it stays Foundation-only); a plugin implements this protocol (the
/// `ColorManagement` product does it on lcms2) and is registered at runtime with ``ColorConversion/register(_:)``.
///
/// Threading: called from the decode pool, concurrently from several threads; implementations must be
/// thread-safe and may block. Errors: throw ``ImageError`` (`badImageData` for a profile the engine refuses);
/// other errors are wrapped as `badImageData` at the decode stage.
public protocol ColorConverter: Sendable {
    /// Converts 8-bit `pixels` whose colours `iccProfile` describes to sRGB, keeping the layout and alpha.
    ///
    /// The profile's colour space matches the layout (RGB for `rgb8`/`rgba8`, gray for `gray8`/`grayAlpha8`);
    /// ``ColorConversion`` checks that before it calls.
    func convertToSRGB(_ pixels: PixelBuffer, iccProfile: [UInt8]) throws -> PixelBuffer

    /// Converts raw `samples` (CMYK, 16-bit) to 8-bit sRGB: `rgb8`/`rgba8` for RGB and CMYK, `gray8`/`grayAlpha8`
    /// for gray. Without a profile the converter uses its default for the model (sRGB for RGB and gray).
    func convertToSRGB(_ samples: ColorSamples, iccProfile: [UInt8]?) throws -> PixelBuffer
}
