import ImageCore

/// Mirrors an image horizontally, vertically, or both (an exact pixel permutation).
///
/// Keeps the layout and alpha mode; every frame of an animated image is flipped. Thread-safe; never throws for
/// valid images (frame decoding errors of lazily decoded animations are passed through).
///
/// Key: `flip(h)`, `flip(v)`, `flip(hv)`, or `flip(none)`.
public struct FlipTransformer: Transformer {
    /// Mirror left ↔ right.
    public let horizontal: Bool
    /// Mirror top ↔ bottom.
    public let vertical: Bool

    /// Creates a flip; both axes together equal a 180° rotation.
    public init(horizontal: Bool = false, vertical: Bool = false) {
        self.horizontal = horizontal
        self.vertical = vertical
    }

    /// `flip(h)`, `flip(v)`, `flip(hv)` or `flip(none)`.
    public var transformerKey: String {
        let axes = (horizontal ? "h" : "") + (vertical ? "v" : "")
        return "flip(\(axes.isEmpty ? "none" : axes))"
    }

    /// Flips every frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        try FrameMapper.map(image) { pixels in
            switch (horizontal, vertical) {
            case (true, true): PixelPermutation.apply(.rotate180, to: pixels)
            case (true, false): PixelPermutation.apply(.flipHorizontal, to: pixels)
            case (false, true): PixelPermutation.apply(.flipVertical, to: pixels)
            case (false, false): pixels
            }
        }
    }
}
