/// The memory layout of one pixel in a ``PixelBuffer``.
///
/// Every layout is 8 bits per channel. Coders convert 16-bit sources down and expand palettes, so a consumer
/// only ever meets these four layouts.
public enum PixelLayout: Hashable, Sendable {
    /// Red, green, blue, alpha; 4 bytes per pixel.
    case rgba8
    /// Red, green, blue; 3 bytes per pixel.
    case rgb8
    /// Luminance; 1 byte per pixel.
    case gray8
    /// Luminance, alpha; 2 bytes per pixel.
    case grayAlpha8

    /// Bytes per pixel of this layout.
    public var bytesPerPixel: Int {
        switch self {
        case .rgba8: 4
        case .rgb8: 3
        case .gray8: 1
        case .grayAlpha8: 2
        }
    }

    /// Whether the layout carries an alpha channel.
    public var hasAlpha: Bool { self == .rgba8 || self == .grayAlpha8 }
}

/// How the colour channels of a pixel relate to its alpha channel.
public enum AlphaMode: Hashable, Sendable {
    /// The layout has no alpha channel (or the image is known to be opaque).
    case none
    /// Colour channels are independent of alpha (PNG, WebP and GIF store pixels this way).
    case straight
    /// Colour channels are already multiplied by alpha (what resampling and compositing want).
    case premultiplied
}

/// A rectangle of 8-bit pixels in row-major order, top row first.
///
/// A value type backed by a copy-on-write `[UInt8]`: passing it around or storing it in several images does not
/// copy the pixels. `bytesPerRow` may exceed `width * layout.bytesPerPixel` (row padding).
public struct PixelBuffer: Hashable, Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// The pixel layout.
    public let layout: PixelLayout
    /// How colour relates to alpha.
    public let alphaMode: AlphaMode
    /// Bytes from the start of one row to the start of the next.
    public let bytesPerRow: Int
    /// The pixel bytes: at least `bytesPerRow * height` of them.
    public var bytes: [UInt8]

    /// Creates a buffer over existing bytes.
    ///
    /// - Precondition: `bytes.count >= bytesPerRow * height` and `bytesPerRow >= width * layout.bytesPerPixel`.
    public init(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil, bytesPerRow: Int? = nil,
        bytes: [UInt8]
    ) {
        let rowBytes = bytesPerRow ?? width * layout.bytesPerPixel
        precondition(width >= 0 && height >= 0, "negative pixel size")
        precondition(rowBytes >= width * layout.bytesPerPixel, "bytesPerRow too small for width")
        precondition(bytes.count >= rowBytes * height, "pixel buffer shorter than bytesPerRow * height")
        self.width = width
        self.height = height
        self.layout = layout
        self.alphaMode = layout.hasAlpha ? (alphaMode ?? .straight) : .none
        self.bytesPerRow = rowBytes
        self.bytes = bytes
    }

    /// Creates a buffer of the given size filled with zero bytes (transparent black, or black).
    public init(width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil) {
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode,
            bytes: [UInt8](repeating: 0, count: width * height * layout.bytesPerPixel))
    }

    /// The number of bytes the pixels occupy in memory.
    public var byteCount: Int { bytes.count }

    /// The bytes of the pixel at `(x, y)`, as many as the layout has channels.
    ///
    /// - Precondition: the coordinate lies inside the buffer.
    public func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of bounds")
        let start = y * bytesPerRow + x * layout.bytesPerPixel
        return bytes[start..<start + layout.bytesPerPixel]
    }
}
