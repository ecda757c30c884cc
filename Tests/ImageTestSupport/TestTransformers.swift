import ImageCore

/// Transformers whose second application is visible, so a test can tell "transformed once" from "twice".
///
/// `grow(by: 2)` turns 10x10 into 12x12 (and 12x12 into 14x14); `invert` turns a colour into its complement
/// (twice gives the colour back). Both work frame by frame and count their calls.
public final class CompoundingTransformer: Transformer, Sendable {
    /// What the transformer does.
    public enum Kind: Sendable {
        /// Adds `n` pixels to width and height, filled with the first pixel's colour.
        case grow(Int)
        /// Replaces every RGB value `v` with `255 - v`.
        case invert
    }

    /// The stable key.
    public let transformerKey: String
    private let kind: Kind
    private let calls = Locked(0)

    /// Creates a transformer.
    public init(_ kind: Kind) {
        self.kind = kind
        switch kind {
        case .grow(let amount): transformerKey = "grow(\(amount))"
        case .invert: transformerKey = "invert"
        }
    }

    /// Calls so far.
    public var callCount: Int { calls.value }

    /// Applies the transformation to every held frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        calls.withLock { $0 += 1 }
        let frames = image.frames.map { frame -> ImageFrame in
            let source = frame.pixels
            let first = Array(source.pixel(x: 0, y: 0))
            let rgba = first.count == 4 ? first : [first[0], first[0], first[0], 255]
            let width: Int
            let height: Int
            var color = rgba
            switch kind {
            case .grow(let amount):
                width = source.width + amount
                height = source.height + amount
            case .invert:
                width = source.width
                height = source.height
                color = [255 - rgba[0], 255 - rgba[1], 255 - rgba[2], rgba[3]]
            }
            var bytes = [UInt8]()
            bytes.reserveCapacity(width * height * 4)
            for _ in 0..<(width * height) { bytes += color }
            return ImageFrame(
                pixels: PixelBuffer(width: width, height: height, layout: .rgba8, bytes: bytes),
                duration: frame.duration)
        }
        return image.with(frames: frames)
    }
}
