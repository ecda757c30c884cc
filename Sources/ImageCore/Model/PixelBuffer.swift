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
///
/// Invariant (holds for every value, whoever built it): `width`, `height` ≥ 0, `bytesPerRow ≥ width ×
/// bytesPerPixel`, and ``bytes`` holds at least `bytesPerRow × height` bytes, all without integer overflow. The
/// geometry is immutable and ``bytes`` is padded back to the geometry's length after any assignment or mutation,
/// so code that indexes the buffer from its geometry can never read or write outside it.
public struct PixelBuffer: Hashable, Sendable {
    /// The largest width or height a buffer may have (2^31 − 1), so that every side fits the 32-bit integers C
    /// libraries take.
    public static let maximumDimension = Int(Int32.max)

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
    /// The pixel bytes: at least `bytesPerRow * height` of them, whatever is assigned.
    ///
    /// Mutating elements in place (`buffer.bytes[i] = v`) is free of copies; an assignment or mutation that
    /// leaves fewer bytes than the geometry needs is padded back with zeros, so the invariant cannot be broken
    /// (and code indexing by geometry can never leave the storage). ``withUnsafeMutableBytes(_:)`` gives a
    /// pointer whose length cannot change.
    public var bytes: [UInt8] {
        get { storage }
        set {
            storage = newValue
            restoreLength()
        }
        _modify {
            defer { restoreLength() }
            yield &storage
        }
    }

    private var storage: [UInt8]

    /// Bytes the geometry needs (computed without overflow when the value was built).
    private var requiredByteCount: Int { bytesPerRow * height }

    private mutating func restoreLength() {
        let missing = requiredByteCount - storage.count
        if missing > 0 { storage.append(contentsOf: repeatElement(0, count: missing)) }
    }

    /// Creates a buffer over existing bytes, validating the geometry against them.
    ///
    /// Use this initializer for any geometry that comes from outside the process (file headers, user input).
    /// - Throws: ``ImageError`` `badImageData` (stage `decode`) when a side is negative or larger than
    ///   ``maximumDimension``, when `bytesPerRow` is smaller than a row, when the sizes overflow, or when `bytes`
    ///   is shorter than `bytesPerRow × height`.
    public init(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil, bytesPerRow: Int? = nil,
        validating bytes: [UInt8]
    ) throws(ImageError) {
        let rowBytes = try Self.validatedRowBytes(
            width: width, height: height, layout: layout, bytesPerRow: bytesPerRow, available: bytes.count)
        self.width = width
        self.height = height
        self.layout = layout
        self.alphaMode = layout.hasAlpha ? (alphaMode ?? .straight) : .none
        self.bytesPerRow = rowBytes
        self.storage = bytes
    }

    /// Creates a buffer over existing bytes whose geometry the caller computed itself.
    ///
    /// For pixels made in memory by code that knows their size. Geometry read from untrusted input goes
    /// through ``init(width:height:layout:alphaMode:bytesPerRow:validating:)``, which throws instead.
    /// - Precondition: the geometry is valid (see the type's invariant); a violation is a programming error.
    public init(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil, bytesPerRow: Int? = nil,
        bytes: [UInt8]
    ) {
        do {
            try self.init(
                width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: bytesPerRow,
                validating: bytes)
        } catch {
            preconditionFailure("PixelBuffer: \(error.message ?? "invalid geometry")")
        }
    }

    /// Creates a buffer of the given size filled with zero bytes (transparent black, or black).
    ///
    /// - Precondition: the size is valid (see the type's invariant).
    public init(width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil) {
        let (count, overflow) = Self.byteCount(width: width, height: height, layout: layout)
        precondition(!overflow, "PixelBuffer: \(width)x\(height) overflows")
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode,
            bytes: [UInt8](repeating: 0, count: count))
    }

    /// Creates a zero-filled buffer of a size that comes from untrusted input.
    ///
    /// - Throws: ``ImageError`` `badImageData` for a negative, oversized or overflowing size.
    public init(zeroedWidth width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil)
        throws(ImageError)
    {
        let (count, overflow) = Self.byteCount(width: width, height: height, layout: layout)
        guard !overflow, width >= 0, height >= 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "pixel buffer \(width)x\(height) is invalid")
        }
        try self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode,
            validating: [UInt8](repeating: 0, count: count))
    }

    /// The number of bytes the pixels occupy in memory.
    public var byteCount: Int { storage.count }

    /// The bytes of the pixel at `(x, y)`, as many as the layout has channels.
    ///
    /// - Precondition: the coordinate lies inside the buffer.
    public func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of bounds")
        let start = y * bytesPerRow + x * layout.bytesPerPixel
        return bytes[start..<start + layout.bytesPerPixel]
    }

    /// Runs `body` with mutable access to the pixel bytes; their number cannot change, so the invariant holds.
    public mutating func withUnsafeMutableBytes<R, E: Error>(
        _ body: (inout UnsafeMutableBufferPointer<UInt8>) throws(E) -> R
    ) throws(E) -> R {
        try storage.withUnsafeMutableBufferPointer { (buffer) throws(E) -> R in try body(&buffer) }
    }

    /// `width × height × bytesPerPixel` and whether it overflowed (negative sizes count as overflow).
    static func byteCount(width: Int, height: Int, layout: PixelLayout) -> (Int, Bool) {
        guard width >= 0, height >= 0 else { return (0, true) }
        let (row, o1) = width.multipliedReportingOverflow(by: layout.bytesPerPixel)
        let (total, o2) = row.multipliedReportingOverflow(by: height)
        return (total, o1 || o2)
    }

    private static func validatedRowBytes(
        width: Int, height: Int, layout: PixelLayout, bytesPerRow: Int?, available: Int
    ) throws(ImageError) -> Int {
        func invalid(_ why: String) -> ImageError {
            ImageError(.badImageData, stage: .decode, message: "pixel buffer \(width)x\(height): \(why)")
        }
        guard width >= 0, height >= 0 else { throw invalid("negative size") }
        guard width <= maximumDimension, height <= maximumDimension else { throw invalid("side too large") }
        let (minimumRow, rowOverflow) = width.multipliedReportingOverflow(by: layout.bytesPerPixel)
        guard !rowOverflow else { throw invalid("row size overflows") }
        let rowBytes = bytesPerRow ?? minimumRow
        guard rowBytes >= minimumRow else { throw invalid("bytesPerRow \(rowBytes) is smaller than a row") }
        let (needed, overflow) = rowBytes.multipliedReportingOverflow(by: height)
        guard !overflow else { throw invalid("byte count overflows") }
        guard available >= needed else { throw invalid("\(available) bytes for \(needed) needed") }
        return rowBytes
    }
}
