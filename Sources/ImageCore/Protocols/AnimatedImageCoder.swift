import Foundation

/// A coder for animated formats (GIF, WebP, APNG) that can decode frames on demand.
///
/// ``ImageCoder/decode(_:options:)`` of an animated coder returns the first frame plus an
/// ``AnimatedImageProvider`` (or all frames with ``ImageDecodeOptions/preloadAllFrames``); this protocol lets
/// callers open the animation directly.
public protocol AnimatedImageCoder: ImageCoder {
    /// Opens an animation; reads frame count, loop count and durations without decoding pixels.
    func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider
}

/// Decodes the frames of one animation on demand.
///
/// Thread-safe (frames may be requested from several threads; implementations serialize internally). Holds the
/// encoded bytes, not the pixels, so an ``Image`` that keeps a provider costs only its held frames.
public protocol AnimatedImageProvider: Sendable {
    /// Number of frames.
    var frameCount: Int { get }
    /// Times the animation repeats; 0 means forever.
    var loopCount: Int { get }
    /// The canvas size; every frame is composited to it.
    var canvasSize: PixelSize { get }
    /// Display time of frame `index` in seconds.
    func duration(at index: Int) -> Double
    /// Decodes and composites frame `index` (may block).
    func frame(at index: Int) throws -> ImageFrame
    /// Bytes the provider keeps between calls (a compositing canvas, a decoder's buffers); counted in
    /// ``Image/memoryCost`` so caches see what an on-demand animation really holds.
    var retainedByteCount: Int { get }
}

extension AnimatedImageProvider {
    /// Default: nothing retained beyond the encoded bytes.
    public var retainedByteCount: Int { 0 }
}
