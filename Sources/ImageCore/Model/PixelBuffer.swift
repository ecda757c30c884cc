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
/// A value type over reference-counted, copy-on-write storage from ``PixelPool``: passing it around or storing it
/// in several images does not copy the pixels, and when the last buffer using the storage goes, the storage returns
/// to the pool for the next decode or resize. Read the pixels with ``withUnsafeBytes(_:)``, write them with
/// ``withUnsafeMutableBytes(_:)`` (which copies first when the storage is shared), and make a buffer from pixels you
/// produce with ``init(width:height:layout:alphaMode:bytesPerRow:initializingWith:)``, which writes straight into
/// pooled storage. ``bytes`` is a read-only view of them. `bytesPerRow` may exceed
/// `width * layout.bytesPerPixel` (row padding).
///
/// Invariant (holds for every value, whoever built it): `width`, `height` ≥ 0, `bytesPerRow ≥ width ×
/// bytesPerPixel`, and the storage holds at least `bytesPerRow × height` bytes, all without integer overflow. The
/// geometry is immutable and the storage's length cannot change, so code that indexes the buffer from its geometry
/// can never read or write outside it.
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

    private var storage: PixelStorage

    /// The pixel bytes (``byteCount`` of them, at least `bytesPerRow * height`), read-only and without a copy.
    ///
    /// A collection over this buffer's storage as it is now: indexing is O(1), and a later write to the buffer
    /// copies the storage first, so the bytes you hold never change. `Array(buffer.bytes)` makes an array. Write the
    /// pixels through ``withUnsafeMutableBytes(_:)``; long loops read faster through ``withUnsafeBytes(_:)``.
    public var bytes: PixelBytes { PixelBytes(storage) }

    /// A buffer over `storage`, whose geometry the caller (ImageCore) validated.
    init(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode?, bytesPerRow: Int, storage: PixelStorage
    ) {
        self.width = width
        self.height = height
        self.layout = layout
        self.alphaMode = layout.hasAlpha ? (alphaMode ?? .straight) : .none
        self.bytesPerRow = bytesPerRow
        self.storage = storage
    }

    /// Creates a buffer holding a copy of `bytes`, validating the geometry against them.
    ///
    /// Use this initializer for any geometry that comes from outside the process (file headers, user input).
    /// Pixels produced in place are cheaper through ``init(validatingWidth:height:layout:alphaMode:bytesPerRow:initializingWith:)``.
    /// - Throws: ``ImageError`` `badImageData` (stage `decode`) when a side is negative or larger than
    ///   ``maximumDimension``, when `bytesPerRow` is smaller than a row, when the sizes overflow, or when `bytes`
    ///   is shorter than `bytesPerRow × height`; `imageTooLarge` (stage `decode`) when the system refuses the memory.
    public init(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil, bytesPerRow: Int? = nil,
        validating bytes: [UInt8]
    ) throws(ImageError) {
        let rowBytes = try Self.validatedRowBytes(
            width: width, height: height, layout: layout, bytesPerRow: bytesPerRow, available: bytes.count)
        let storage = try PixelStorage.allocating(count: bytes.count)
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: rowBytes,
            storage: bytes.withUnsafeBufferPointer { storage.copying($0) })
    }

    /// Creates a buffer holding a copy of `bytes`, whose geometry the caller computed itself.
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

    /// Creates a buffer whose pixels `body` writes into pooled storage, for geometry that comes from untrusted
    /// input.
    ///
    /// `body` gets exactly `bytesPerRow × height` bytes and must write every one it leaves meaningful: the storage
    /// is recycled, so a byte it does not write holds whatever an earlier buffer of this process left there (never
    /// memory the pool does not own). A decoder that can stop early zeroes the rows it did not reach.
    /// - Throws: ``ImageError`` `badImageData` for invalid geometry (see
    ///   ``init(width:height:layout:alphaMode:bytesPerRow:validating:)``), `imageTooLarge` when the system refuses
    ///   the memory (`body` is not called), or what `body` throws; either way no buffer is made and the storage goes
    ///   back to the pool.
    public init(
        validatingWidth width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil,
        bytesPerRow: Int? = nil, initializingWith body: (UnsafeMutableBufferPointer<UInt8>) throws(ImageError) -> Void
    ) throws(ImageError) {
        let rowBytes = try Self.validatedRowBytes(
            width: width, height: height, layout: layout, bytesPerRow: bytesPerRow, available: nil)
        let storage = try PixelStorage.allocating(count: rowBytes * height)
        try body(storage.bytes)
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: rowBytes,
            storage: storage)
    }

    /// Creates a buffer whose pixels `body` writes into pooled storage, for geometry the caller computed itself.
    ///
    /// The contract of ``init(validatingWidth:height:layout:alphaMode:bytesPerRow:initializingWith:)`` holds: `body`
    /// gets exactly `bytesPerRow × height` recycled bytes of unspecified contents and writes them.
    /// - Precondition: the geometry is valid (see the type's invariant).
    public init<E: Error>(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil, bytesPerRow: Int? = nil,
        initializingWith body: (UnsafeMutableBufferPointer<UInt8>) throws(E) -> Void
    ) throws(E) {
        let rowBytes: Int
        do {
            rowBytes = try Self.validatedRowBytes(
                width: width, height: height, layout: layout, bytesPerRow: bytesPerRow, available: nil)
        } catch {
            preconditionFailure("PixelBuffer: \(error.message ?? "invalid geometry")")
        }
        let storage = PixelStorage(count: rowBytes * height)
        try body(storage.bytes)
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: rowBytes,
            storage: storage)
    }

    /// Creates a buffer of the given size filled with zero bytes (transparent black, or black).
    ///
    /// - Precondition: the size is valid (see the type's invariant).
    public init(width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil) {
        let (count, overflow) = Self.byteCount(width: width, height: height, layout: layout)
        precondition(
            !overflow && width <= Self.maximumDimension && height <= Self.maximumDimension,
            "PixelBuffer: \(width)x\(height) overflows")
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode,
            bytesPerRow: width * layout.bytesPerPixel, storage: PixelStorage(count: count).zeroingIfNeeded())
    }

    /// Creates a zero-filled buffer of a size that comes from untrusted input.
    ///
    /// - Throws: ``ImageError`` `badImageData` for a negative, oversized or overflowing size, `imageTooLarge` when
    ///   the system refuses the memory.
    public init(zeroedWidth width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode? = nil)
        throws(ImageError)
    {
        let rowBytes = try Self.validatedRowBytes(
            width: width, height: height, layout: layout, bytesPerRow: nil, available: nil)
        self.init(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: rowBytes,
            storage: try PixelStorage.allocating(count: rowBytes * height).zeroingIfNeeded())
    }

    /// The number of bytes the pixels occupy in memory.
    public var byteCount: Int { storage.count }

    /// Bytes of memory the pixels hold resident: ``byteCount``, or more where the storage ends inside a huge page
    /// (``PixelPool/usesHugePages``), which is resident whole.
    var residentByteCount: Int { storage.resident }

    /// The bytes of the pixel at `(x, y)`, as many as the layout has channels.
    ///
    /// - Precondition: the coordinate lies inside the buffer.
    public func pixel(x: Int, y: Int) -> Slice<PixelBytes> {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of bounds")
        let start = y * bytesPerRow + x * layout.bytesPerPixel
        return bytes[start..<start + layout.bytesPerPixel]
    }

    /// Runs `body` with read access to the pixel bytes (``byteCount`` of them). The pointer is valid only inside
    /// `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// Runs `body` with mutable access to the pixel bytes; their number cannot change, so the invariant holds.
    ///
    /// Copy-on-write: when another buffer shares the storage, the bytes are copied (into pooled storage) first, so
    /// no other value sees the change.
    public mutating func withUnsafeMutableBytes<R, E: Error>(
        _ body: (inout UnsafeMutableBufferPointer<UInt8>) throws(E) -> R
    ) throws(E) -> R {
        if !isKnownUniquelyReferenced(&storage) {
            storage = PixelStorage(count: storage.count).copying(UnsafeBufferPointer(storage.bytes))
        }
        var buffer = storage.bytes
        let result = try body(&buffer)
        withExtendedLifetime(storage) {}
        return result
    }

    /// Whether `other` shares this buffer's storage (no copy was made between them). For tests of copy-on-write.
    package func sharesStorage(with other: PixelBuffer) -> Bool { storage === other.storage }

    public static func == (lhs: PixelBuffer, rhs: PixelBuffer) -> Bool {
        guard lhs.width == rhs.width, lhs.height == rhs.height, lhs.layout == rhs.layout,
            lhs.alphaMode == rhs.alphaMode, lhs.bytesPerRow == rhs.bytesPerRow, lhs.byteCount == rhs.byteCount
        else { return false }
        return lhs.bytes == rhs.bytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(width)
        hasher.combine(height)
        hasher.combine(layout)
        hasher.combine(alphaMode)
        hasher.combine(bytesPerRow)
        withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// `width × height × bytesPerPixel` and whether it overflowed (negative sizes count as overflow).
    static func byteCount(width: Int, height: Int, layout: PixelLayout) -> (Int, Bool) {
        guard width >= 0, height >= 0 else { return (0, true) }
        let (row, o1) = width.multipliedReportingOverflow(by: layout.bytesPerPixel)
        let (total, o2) = row.multipliedReportingOverflow(by: height)
        return (total, o1 || o2)
    }

    static func validatedRowBytes(
        width: Int, height: Int, layout: PixelLayout, bytesPerRow: Int?, available: Int?
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
        if let available, available < needed { throw invalid("\(available) bytes for \(needed) needed") }
        return rowBytes
    }
}
