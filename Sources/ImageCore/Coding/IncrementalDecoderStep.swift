import Foundation

/// The format-specific part of an incremental decoder: what a coder plugs into ``IncrementalDecoder``.
///
/// The scaffold owns everything else: it keeps the bytes, asks for a preview only when new bytes arrived and the
/// prefix has come far enough (``progress(in:)``), checks the header's size against the pixel budget before the
/// first preview, marks every preview partial, keeps the final decode's result, and maps errors. A step reads its
/// format: the header, how far a prefix has come, a preview, and the full decode.
///
/// Threading: called by its ``IncrementalDecoder`` only, from one thread at a time; a class, because steps keep
/// decoder state (a C handle fed the new bytes) between calls.
public protocol IncrementalDecoderStep: AnyObject {
    /// The stored pixel size the header in `data` (a prefix of the file) declares, or nil until it has arrived.
    ///
    /// Read without allocating pixel memory: the scaffold checks this size against
    /// ``ImageDecodeOptions/maxPixelCount`` before it asks for any preview, and asks again with longer prefixes
    /// until the answer is not nil. Throwing stops the previews (the final decode reports what is wrong), except
    /// `imageTooLarge`, which every later preview call rethrows.
    func header(in data: Data) throws -> PixelSize?

    /// How far `data` has come towards a better preview, or nil while it holds nothing a preview could show.
    ///
    /// The scaffold calls ``preview(of:)`` only when the bytes grew since its last call and this progress passed
    /// the last preview's by the progress's spacing. The default is the byte count, previewed at every growth.
    func progress(in data: Data) -> IncrementalProgress?

    /// A preview of `data`, a longer prefix than the last call's.
    ///
    /// Any image returned is marked ``ImageMetadata/isPartial`` by the scaffold. Throwing stops the previews (the
    /// last one stands until the final image), except `imageTooLarge`, which every later preview call rethrows:
    /// an error that more bytes could cure (a cut inside a segment) should be answered with
    /// ``IncrementalPreview/nothingNew`` instead.
    func preview(of data: Data) throws -> IncrementalPreview

    /// The full decode of `data`, the whole file as the caller declared it: the coder's `decode(_:options:)`, so
    /// that the final image of an incremental decode is exactly a one-shot decode of the same bytes.
    func decodeFinal(_ data: Data) throws -> Image
}

extension IncrementalDecoderStep {
    /// The byte count, previewed at every growth.
    public func progress(in data: Data) -> IncrementalProgress? { IncrementalProgress(units: data.count) }
}

/// What a step's preview found.
public enum IncrementalPreview {
    /// No new pixels: the last preview (if any) stands.
    case nothingNew
    /// A new preview.
    case image(Image)
    /// No preview will improve before the bytes are final: the image given, else the last preview, stands, and
    /// the step is not asked again (a complete first frame of an animation, an image sequence that has none).
    case finished(Image?)
}

/// How far a prefix has come towards a better preview, in units a step chooses (bytes, completed scans), and how
/// far past the last preview it must come before a new decode is worth it.
public struct IncrementalProgress: Hashable, Sendable {
    /// The units reached.
    public var units: Int
    /// The fewest units past the last preview that warrant a new decode (at least 1).
    public var minimumGain: Int
    /// When set to `d`, a new decode also waits for a gain of a `1/d` share of the last preview's units, so
    /// previews re-decoding the whole prefix cost O(log n) decodes over a download instead of O(n).
    public var proportionalDivisor: Int?

    /// Creates a progress of `units`; by default any gain warrants a new preview.
    public init(units: Int, minimumGain: Int = 1, proportionalDivisor: Int? = nil) {
        self.units = units
        self.minimumGain = minimumGain
        self.proportionalDivisor = proportionalDivisor
    }

    /// True when this progress warrants a new preview after one made at `last` units.
    public func warrantsPreview(after last: Int) -> Bool {
        let proportional = proportionalDivisor.map { $0 > 0 ? last / $0 : 0 } ?? 0
        let (gain, overflow) = units.subtractingReportingOverflow(last)
        return !overflow && gain >= max(1, minimumGain, proportional)
    }
}
