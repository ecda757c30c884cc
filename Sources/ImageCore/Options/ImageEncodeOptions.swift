/// An 8-bit RGBA colour.
public struct RGBAColor: Hashable, Sendable {
    /// Red.
    public var red: UInt8
    /// Green.
    public var green: UInt8
    /// Blue.
    public var blue: UInt8
    /// Alpha (255 is opaque).
    public var alpha: UInt8
    /// Creates a colour.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }
    /// Opaque white.
    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    /// Opaque black.
    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
}

/// How hard an encoder works: speed against size.
public enum EncodeEffort: Hashable, Sendable {
    /// Fastest settings (the SDK's own encodes, e.g. the cache serializer, use this).
    case fast
    /// The library's default.
    case balanced
    /// Smallest output, slowest.
    case best
}

/// What a coder must respect while encoding.
public struct ImageEncodeOptions: Hashable, Sendable {
    /// Quality for lossy formats, 0...1 (default 0.85). Values outside are clamped and NaN becomes the default,
    /// so coders can turn it into integers without checks.
    public var quality: Double {
        didSet { quality = Self.sanitized(quality) }
    }

    private static func sanitized(_ quality: Double) -> Double {
        quality.isNaN ? 0.85 : min(max(quality, 0), 1)
    }
    /// Speed against size.
    public var effort: EncodeEffort
    /// Lossless encoding where the format has both (WebP).
    public var lossless: Bool
    /// Progressive / interlaced output where the format has it (JPEG, PNG).
    public var progressive: Bool
    /// JPEG chroma subsampling; nil lets the coder choose (4:2:0 for photos).
    public var chromaSubsampling: ChromaSubsampling?
    /// Fit the output inside this size before encoding (aspect ratio kept); nil keeps the size.
    public var maxPixelSize: PixelSize?
    /// Search the quality so the output is at most this many bytes (lossy formats).
    public var maxFileSize: Int?
    /// Pick the lowest quality whose decoded output looks within this distance of the image (JPEG, WebP and AVIF
    /// search; JPEG XL encodes to the distance natively); ``quality`` is then not used. Needs a registered
    /// ``PerceptualMetric`` (see ``PerceptualTarget``). Changes the output: part of any key for encoded results.
    public var perceptualTarget: PerceptualTarget?
    /// Encode only the first frame of an animation.
    public var firstFrameOnly: Bool
    /// Colour that transparent pixels are composited over when the format has no alpha (JPEG).
    public var backgroundColor: RGBAColor
    /// Options for custom coders (see ``CoderOptionKey``).
    public var coderOptions: CoderOptions

    /// Creates encode options.
    public init(
        quality: Double = 0.85, effort: EncodeEffort = .balanced, lossless: Bool = false, progressive: Bool = false,
        chromaSubsampling: ChromaSubsampling? = nil, maxPixelSize: PixelSize? = nil, maxFileSize: Int? = nil,
        perceptualTarget: PerceptualTarget? = nil, firstFrameOnly: Bool = false, backgroundColor: RGBAColor = .white,
        coderOptions: CoderOptions = CoderOptions()
    ) {
        self.quality = Self.sanitized(quality)
        self.effort = effort
        self.lossless = lossless
        self.progressive = progressive
        self.chromaSubsampling = chromaSubsampling
        self.maxPixelSize = maxPixelSize
        self.maxFileSize = maxFileSize
        self.perceptualTarget = perceptualTarget
        self.firstFrameOnly = firstFrameOnly
        self.backgroundColor = backgroundColor
        self.coderOptions = coderOptions
    }
}

/// JPEG chroma subsampling.
public enum ChromaSubsampling: Hashable, Sendable {
    /// No subsampling.
    case s444
    /// Horizontal 2:1.
    case s422
    /// Horizontal and vertical 2:1.
    case s420
    /// Luminance only.
    case gray
}
