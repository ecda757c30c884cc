import Foundation

/// What a coder can read from an image header without decoding pixels.
public struct ImageProperties: Hashable, Sendable {
    /// The format.
    public var format: ImageFormat
    /// Width in pixels as stored.
    public var width: Int
    /// Height in pixels as stored.
    public var height: Int
    /// Frame count when the header tells it cheaply; nil when unknown.
    public var frameCount: Int?

    /// Creates properties.
    public init(format: ImageFormat, width: Int, height: Int, frameCount: Int? = nil) {
        self.format = format
        self.width = width
        self.height = height
        self.frameCount = frameCount
    }
}

/// Decodes bytes into an ``Image`` and encodes an ``Image`` into bytes, for one or more formats.
///
/// Threading: the SDK calls coders from its decode pool (a bounded set of non-cooperative threads), never from
/// Swift's cooperative pool; calls may run concurrently from several threads, so a coder must be thread-safe.
/// Decoding may block. Coders must not `longjmp` through Swift frames and must check
/// ``ImageDecodeOptions/maxPixelCount`` from the header before allocating pixel memory.
///
/// Errors: throw ``ImageError`` (`badImageData`, `imageTooLarge`, `encodeFailed`, `noCoder`); other errors are
/// wrapped by the core as `badImageData` at the decode stage.
public protocol ImageCoder: Sendable {
    /// True when this coder can decode `data` (cheap: look at the magic number only).
    func canDecode(_ data: Data) -> Bool
    /// Decodes `data`, honouring `options`.
    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image
    /// True when this coder can encode to `format`.
    func canEncode(to format: ImageFormat) -> Bool
    /// Encodes `image` to `format`.
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data
    /// Reads size and format from the header without decoding; nil when the header is unreadable or the coder
    /// does not support probing. The core uses it to enforce the pixel budget before any decode.
    func probe(_ data: Data) -> ImageProperties?
    /// True when ``encode(_:as:options:)`` to `format` with ``ImageEncodeOptions/lossless`` writes bytes this coder
    /// decodes back to exactly the image's pixels, every frame, for every 8-bit layout.
    ///
    /// The default cache serializer writes a derived entry only in such a format (``DefaultCacheSerializer``), so a
    /// later disk hit reads back the pixels the first load delivered. Default: false.
    func encodesExactly(to format: ImageFormat) -> Bool
}

extension ImageCoder {
    /// Default: no probing.
    public func probe(_ data: Data) -> ImageProperties? { nil }
    /// Default: no format is promised exact.
    public func encodesExactly(to format: ImageFormat) -> Bool { false }
}
