import Foundation
import ImageCore

/// Rounds selected corners of an image, optionally drawing a border along the rounded outline.
///
/// The shape is a rounded rectangle the size of the image; pixels outside it become transparent, with an
/// anti-aliased edge (coverage from the signed distance to the outline at each pixel centre). The border is the
/// band of `borderWidth` pixels just inside the outline (inner corner radius `radius - borderWidth`), painted
/// with `borderColor` over the image. Radii larger than half the shorter side are clamped to it.
///
/// The result always has alpha: RGB becomes RGBA; gray becomes gray + alpha unless a non-gray border colour
/// forces RGBA (straight alpha, or premultiplied when the source was). Every frame is processed. Thread-safe.
/// Errors: ``/ImageCore/ImageError`` `transformFailed` for a negative or non-finite radius or border width.
///
/// Radius and border width are rounded to 0.01 px (the key's precision). Key:
/// `roundCorners(r=<radius>,<corners>)` or `roundCorners(r=<radius>,<corners>,border=<width>,<#RRGGBBAA>)`,
/// where corners is `all`, `none`, or a `+`-joined subset of `tl`, `tr`, `bl`, `br` in that order, e.g.
/// `roundCorners(r=12.00,tl+tr,border=2.00,#FF0000FF)`.
public struct RoundCornerTransformer: Transformer {
    /// A set of corners.
    public struct Corners: OptionSet, Hashable, Sendable {
        /// The raw bits.
        public let rawValue: UInt8
        /// Creates a set from raw bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The top-left corner.
        public static let topLeft = Corners(rawValue: 1)
        /// The top-right corner.
        public static let topRight = Corners(rawValue: 2)
        /// The bottom-left corner.
        public static let bottomLeft = Corners(rawValue: 4)
        /// The bottom-right corner.
        public static let bottomRight = Corners(rawValue: 8)
        /// All four corners.
        public static let all: Corners = [.topLeft, .topRight, .bottomLeft, .bottomRight]

        /// `all`, `none`, or the members joined by `+` in the order tl, tr, bl, br.
        var keyDescription: String {
            let known = intersection(.all)
            if known == .all { return "all" }
            if known.isEmpty { return "none" }
            let names: [(Corners, String)] = [
                (.topLeft, "tl"), (.topRight, "tr"), (.bottomLeft, "bl"), (.bottomRight, "br"),
            ]
            return names.filter { known.contains($0.0) }.map(\.1).joined(separator: "+")
        }
    }

    /// Corner radius in pixels (rounded to 0.01).
    public let radius: Double
    /// The corners to round; the others stay square.
    public let corners: Corners
    /// Border width in pixels (rounded to 0.01); 0 for none.
    public let borderWidth: Double
    /// Border colour (straight alpha).
    public let borderColor: RGBAColor

    /// Creates a corner-rounding transformer.
    public init(
        radius: Double, corners: Corners = .all, borderWidth: Double = 0, borderColor: RGBAColor = .black
    ) {
        self.radius = KeyFormat.quantize(radius, decimals: 2)
        self.corners = corners.intersection(.all)
        self.borderWidth = KeyFormat.quantize(borderWidth, decimals: 2)
        self.borderColor = borderColor
    }

    /// See the type documentation for the format.
    public var transformerKey: String {
        var key = "roundCorners(r=\(KeyFormat.fixed(radius, decimals: 2)),\(corners.keyDescription)"
        if hasBorder { key += ",border=\(KeyFormat.fixed(borderWidth, decimals: 2)),\(borderColor.keyDescription)" }
        return key + ")"
    }

    private var hasBorder: Bool { borderWidth > 0 && borderColor.alpha > 0 }

    /// Rounds the corners of every frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        guard radius.isFinite, radius >= 0, borderWidth.isFinite, borderWidth >= 0 else {
            throw PixelStorage.invalid("roundCorners: radius \(radius) / border \(borderWidth) must be finite, ≥ 0")
        }
        return try FrameMapper.map(image) { round($0) }
    }

    func round(_ pixels: PixelBuffer) -> PixelBuffer {
        let w = pixels.width
        let h = pixels.height
        guard w > 0, h > 0 else { return pixels }
        var layout = pixels.layoutWithAlpha
        if hasBorder && !borderColor.isGray { layout = .rgba8 }
        let alphaMode = pixels.alphaMode(for: layout)
        let inCodec = RowCodec(pixels)
        let outCodec = RowCodec(layout: layout, alphaMode: alphaMode)
        let border = hasBorder ? min(borderWidth, Double(min(w, h)) / 2) : 0
        let outer = RoundedRect(width: Double(w), height: Double(h), radius: radius, corners: corners, inset: 0)
        let inner = RoundedRect(width: Double(w), height: Double(h), radius: radius, corners: corners, inset: border)
        let paint = borderColor.premultiplied
        // Pixels farther than this from every edge are fully inside both shapes.
        let margin = Int((outer.maxRadius + border).rounded(.up)) + 1
        return pixels.withUnsafeBytes { bytes in
            let src = bytes.baseAddress!
            return PixelStorage.make(width: w, height: h, layout: layout, alphaMode: alphaMode) { out in
                let rowBytes = w * layout.bytesPerPixel
                Parallel.forEachStripe(count: h, costPerItem: w) { rows in
                    let row = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: w)
                    defer { row.deallocate() }
                    for y in rows {
                        inCodec.load(src + y * pixels.bytesPerRow, w, row)
                        let edgeRow = y < margin || y >= h - margin
                        let py = Double(y) + 0.5
                        for x in 0..<w {
                            if !edgeRow && x >= margin && x < w - margin { continue }
                            let px = Double(x) + 0.5
                            let outerCoverage = Float(outer.coverage(px, py))
                            let innerCoverage = border > 0 ? Float(inner.coverage(px, py)) : outerCoverage
                            row[x] = row[x] * innerCoverage + paint * max(0, outerCoverage - innerCoverage)
                        }
                        outCodec.store(row, w, out + y * rowBytes)
                    }
                }
            }
        }
    }
}

/// A rectangle `(0, 0, width, height)` inset by `inset`, with some corners rounded.
struct RoundedRect {
    let halfWidth: Double
    let halfHeight: Double
    let centerX: Double
    let centerY: Double
    /// Radii of the top-left, top-right, bottom-left, bottom-right corners (0 when square).
    let radii: SIMD4<Double>

    init(width: Double, height: Double, radius: Double, corners: RoundCornerTransformer.Corners, inset: Double) {
        centerX = width / 2
        centerY = height / 2
        halfWidth = max(0, width / 2 - inset)
        halfHeight = max(0, height / 2 - inset)
        let outerLimit = min(width, height) / 2
        let r = max(0, min(radius, outerLimit) - inset)
        let limited = min(r, min(halfWidth, halfHeight))
        radii = SIMD4(
            corners.contains(.topLeft) ? limited : 0, corners.contains(.topRight) ? limited : 0,
            corners.contains(.bottomLeft) ? limited : 0, corners.contains(.bottomRight) ? limited : 0)
    }

    /// The largest corner radius.
    var maxRadius: Double { radii.max() }

    /// Fraction of the pixel centred at (x, y) covered by the shape: ½ minus the signed distance, clamped.
    @inline(__always)
    func coverage(_ x: Double, _ y: Double) -> Double {
        let qx = x - centerX
        let qy = y - centerY
        let r = qy < 0 ? (qx < 0 ? radii[0] : radii[1]) : (qx < 0 ? radii[2] : radii[3])
        let ax = abs(qx) - halfWidth + r
        let ay = abs(qy) - halfHeight + r
        let outside = (max(ax, 0) * max(ax, 0) + max(ay, 0) * max(ay, 0)).squareRoot()
        let distance = outside + min(max(ax, ay), 0) - r
        return min(1, max(0, 0.5 - distance))
    }
}
