/// EXIF orientation: how the stored pixels must be turned to be shown upright.
///
/// Raw values are the EXIF tag values 1–8.
public enum ImageOrientation: Int, Hashable, Sendable, CaseIterable {
    /// Stored upright (EXIF 1).
    case up = 1
    /// Mirrored horizontally (EXIF 2).
    case upMirrored = 2
    /// Rotated 180° (EXIF 3).
    case down = 3
    /// Mirrored vertically (EXIF 4).
    case downMirrored = 4
    /// Mirrored along the top-left diagonal (EXIF 5).
    case leftMirrored = 5
    /// Must be rotated 90° clockwise to show (EXIF 6).
    case right = 6
    /// Mirrored along the top-right diagonal (EXIF 7).
    case rightMirrored = 7
    /// Must be rotated 90° counter-clockwise to show (EXIF 8).
    case left = 8

    /// Whether showing the image swaps its width and height.
    public var swapsDimensions: Bool { rawValue >= 5 }
}

/// What a coder learned about an image besides its pixels.
public struct ImageMetadata: Hashable, Sendable {
    /// The orientation of the pixels as stored in ``Image/frames``.
    ///
    /// `.up` once a coder applied the EXIF orientation (the default); the EXIF value when the caller asked to keep
    /// raw pixels (``ImageDecodeOptions/applyOrientation`` false).
    public var orientation: ImageOrientation
    /// The orientation the file declared, whether or not it was applied.
    public var sourceOrientation: ImageOrientation
    /// The embedded ICC colour profile, verbatim.
    public var iccProfile: [UInt8]?
    /// The raw EXIF block (TIFF header onwards), verbatim.
    public var exif: [UInt8]?
    /// Pixel size of the image in the file, before any thumbnailing or scale-down.
    public var sourcePixelWidth: Int?
    /// Pixel height of the image in the file, before any thumbnailing or scale-down.
    public var sourcePixelHeight: Int?
    /// True when the pixels came from an incremental decode of incomplete bytes (a progressive preview).
    ///
    /// A preview is not the load's result: more bytes are expected, and the final image follows. Distinct from
    /// ``isIncomplete``, which marks a final image whose bytes turned out to be cut short.
    public var isPartial: Bool
    /// True when the bytes a coder was given as the whole file ended before the image did (a truncated file):
    /// rows, scans or frames are missing, or were filled in by the decoder.
    ///
    /// Set by a coder's `decode` and by an incremental decoder once its bytes are final, never on a progressive
    /// preview (those are ``isPartial``). The image is what those bytes show, not the file's image: don't keep it
    /// as the whole image (under the file's cache key). False says the decoder reached the end of everything it
    /// read; a decode that reads only part of a file (the first frame of an animation) cannot tell whether the
    /// rest is there.
    public var isIncomplete: Bool
    /// True when a transformer produced these pixels (the cache serializer must encode them).
    public var isTransformed: Bool

    /// Creates metadata; every field defaults to "nothing known".
    public init(
        orientation: ImageOrientation = .up, sourceOrientation: ImageOrientation? = nil, iccProfile: [UInt8]? = nil,
        exif: [UInt8]? = nil, sourcePixelWidth: Int? = nil, sourcePixelHeight: Int? = nil, isPartial: Bool = false,
        isTransformed: Bool = false, isIncomplete: Bool = false
    ) {
        self.orientation = orientation
        self.sourceOrientation = sourceOrientation ?? orientation
        self.iccProfile = iccProfile
        self.exif = exif
        self.sourcePixelWidth = sourcePixelWidth
        self.sourcePixelHeight = sourcePixelHeight
        self.isPartial = isPartial
        self.isTransformed = isTransformed
        self.isIncomplete = isIncomplete
    }
}
