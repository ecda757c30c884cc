import Foundation

/// A coder that turns incomplete bytes into partial images while a download runs.
///
/// The core creates one ``IncrementalImageDecoder`` per progressive download and drives it from one thread at a
/// time. Every loader gets progressive previews for free: loaders only hand over the bytes received so far.
/// The built-in coders return an ``IncrementalDecoder`` around their format's ``IncrementalDecoderStep``, which
/// keeps this contract for them; a third-party coder can do the same.
public protocol ProgressiveImageCoder: ImageCoder {
    /// True when incremental decoding of `data` (a prefix of the file, possibly just the header) is supported.
    func canIncrementallyDecode(_ data: Data) -> Bool
    /// Creates a decoder for one image's bytes.
    func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder
}

/// Decodes one image from bytes that arrive in pieces.
///
/// Not thread-safe: the owner calls it from one thread at a time. Owns its C state and frees it in `deinit`.
public protocol IncrementalImageDecoder: AnyObject {
    /// Hands over every byte received so far (a growing prefix of the file) and whether they are all.
    func update(_ data: Data, isFinal: Bool)
    /// Decodes what the bytes so far allow: nil when no pixels are available yet; a partial image
    /// (``ImageMetadata/isPartial`` true) while incomplete; once `isFinal`, an image equal to a full decode
    /// (marked ``ImageMetadata/isIncomplete`` when the bytes declared final end before the image does).
    func currentImage() throws -> Image?
}
