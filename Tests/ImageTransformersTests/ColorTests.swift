import ImageCore
import ImageTransformers
import Testing

@Suite("Round corners and tint")
struct ColorTests {
    static let red = Fixtures.buffer(width: 40, height: 40, layout: .rgb8) { _, _ in [255, 0, 0] }

    @Test("rounded corners: corners transparent, centre and edges opaque, anti-aliased arc without halo")
    func roundedCorners() throws {
        let out = try RoundCornerTransformer(radius: 10).transform(Image(pixels: Self.red), forKey: "k").pixels
        #expect(out.layout == .rgba8 && out.width == 40 && out.height == 40)
        for (x, y) in [(0, 0), (39, 0), (0, 39), (39, 39), (1, 1)] { #expect(Fixtures.px(out, x, y)[3] == 0) }
        #expect(Fixtures.px(out, 20, 20) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 20, 0) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 0, 20) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 10, 10) == [255, 0, 0, 255])
        var partial = 0
        for y in 0..<40 {
            for x in 0..<40 {
                let p = Fixtures.px(out, x, y)
                if p[3] > 0 { #expect(p[0] == 255 && p[1] == 0 && p[2] == 0, "(\(x),\(y)) \(p)") }
                if p[3] > 0 && p[3] < 255 { partial += 1 }
            }
        }
        #expect(partial >= 4 * 8, "expected an anti-aliased arc in every corner")
        // Pixel centre (3.5, 3.5) is 9.19 px from the arc centre (10, 10): outside → 0; (4.5, 4.5) is 7.78 → in.
        #expect(Fixtures.px(out, 2, 2)[3] == 0)
        #expect(Fixtures.px(out, 4, 4)[3] == 255)
    }

    @Test("only the selected corners are rounded")
    func selectedCorners() throws {
        let out = try RoundCornerTransformer(radius: 10, corners: [.topLeft, .bottomRight])
            .transform(Image(pixels: Self.red), forKey: "k").pixels
        #expect(Fixtures.px(out, 0, 0)[3] == 0)
        #expect(Fixtures.px(out, 39, 39)[3] == 0)
        #expect(Fixtures.px(out, 39, 0) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 0, 39) == [255, 0, 0, 255])
    }

    @Test("the border is drawn in its colour along the outline, inside the shape")
    func border() throws {
        let blue = RGBAColor(red: 0, green: 0, blue: 255)
        let out = try RoundCornerTransformer(radius: 10, borderWidth: 3, borderColor: blue)
            .transform(Image(pixels: Self.red), forKey: "k").pixels
        for (x, y) in [(20, 0), (20, 2), (0, 20), (39, 20), (20, 39)] {
            #expect(Fixtures.px(out, x, y) == [0, 0, 255, 255], "(\(x),\(y))")
        }
        #expect(Fixtures.px(out, 20, 3) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 20, 20) == [255, 0, 0, 255])
        #expect(Fixtures.px(out, 0, 0)[3] == 0)
        // Along the diagonal through the corner: transparent, then border, then image.
        let diagonal = (0..<12).map { Fixtures.px(out, $0, $0) }
        let firstOpaque = try #require(diagonal.firstIndex { $0[3] == 255 })
        #expect(diagonal[firstOpaque][2] > 200, "the arc starts with the border: \(diagonal)")
        #expect(diagonal[11] == [255, 0, 0, 255])
    }

    @Test("gray images stay gray with a gray border; a coloured border makes RGBA")
    func grayLayouts() throws {
        let gray = Fixtures.buffer(width: 20, height: 20, layout: .gray8) { _, _ in [100] }
        let plain = try RoundCornerTransformer(radius: 5).transform(Image(pixels: gray), forKey: "k").pixels
        #expect(plain.layout == .grayAlpha8)
        #expect(Fixtures.px(plain, 10, 10) == [100, 255])
        #expect(Fixtures.px(plain, 0, 0) == [0, 0])
        let grayBorder = try RoundCornerTransformer(radius: 5, borderWidth: 1, borderColor: .white)
            .transform(Image(pixels: gray), forKey: "k").pixels
        #expect(grayBorder.layout == .grayAlpha8 && Fixtures.px(grayBorder, 10, 0) == [255, 255])
        let coloured = try RoundCornerTransformer(
            radius: 5, borderWidth: 1, borderColor: RGBAColor(red: 9, green: 8, blue: 7)
        )
        .transform(Image(pixels: gray), forKey: "k").pixels
        #expect(coloured.layout == .rgba8 && Fixtures.px(coloured, 10, 0) == [9, 8, 7, 255])
    }

    @Test("invalid radius throws")
    func badRadius() {
        let image = Image(pixels: Self.red)
        #expect(throws: ImageError.self) { try RoundCornerTransformer(radius: -1).transform(image, forKey: "k") }
        #expect(throws: ImageError.self) { try RoundCornerTransformer(radius: .infinity).transform(image, forKey: "k") }
    }

    @Test("tint blends colour by amount × tint alpha and keeps alpha")
    func tint() throws {
        let source = Fixtures.buffer(width: 2, height: 1) { x, _ in x == 0 ? [0, 0, 200, 100] : [0, 0, 0, 0] }
        let red = RGBAColor(red: 255, green: 0, blue: 0)
        let half = try TintTransformer(color: red, amount: 0.5).transform(Image(pixels: source), forKey: "k").pixels
        #expect(Fixtures.px(half, 0, 0) == [128, 0, 100, 100])
        #expect(Fixtures.px(half, 1, 0)[3] == 0)
        let full = try TintTransformer(color: red).transform(Image(pixels: source), forKey: "k").pixels
        #expect(Fixtures.px(full, 0, 0) == [255, 0, 0, 100])
        let seeThrough = try TintTransformer(color: RGBAColor(red: 255, green: 0, blue: 0, alpha: 0))
            .transform(Image(pixels: source), forKey: "k").pixels
        #expect(Fixtures.px(seeThrough, 0, 0) == [0, 0, 200, 100])
        let halfAlpha = try TintTransformer(color: RGBAColor(red: 255, green: 0, blue: 0, alpha: 128))
            .transform(Image(pixels: source), forKey: "k").pixels
        #expect(Fixtures.px(halfAlpha, 0, 0) == [128, 0, 100, 100])
    }

    @Test("tint layouts: gray stays gray for gray tints, becomes RGB for colours")
    func tintLayouts() throws {
        let gray = Fixtures.buffer(width: 3, height: 3, layout: .gray8) { _, _ in [40] }
        let grayTint = try TintTransformer(color: .white, amount: 0.5).transform(Image(pixels: gray), forKey: "k")
            .pixels
        #expect(grayTint.layout == .gray8 && Fixtures.px(grayTint, 1, 1) == [148])
        let coloured = try TintTransformer(color: RGBAColor(red: 0, green: 255, blue: 0), amount: 1)
            .transform(Image(pixels: gray), forKey: "k").pixels
        #expect(coloured.layout == .rgb8 && Fixtures.px(coloured, 1, 1) == [0, 255, 0])
        let grayAlpha = Fixtures.buffer(width: 1, height: 1, layout: .grayAlpha8) { _, _ in [40, 7] }
        let ga = try TintTransformer(color: RGBAColor(red: 0, green: 255, blue: 0)).transform(
            Image(pixels: grayAlpha), forKey: "k"
        )
        .pixels
        #expect(ga.layout == .rgba8 && Fixtures.px(ga, 0, 0) == [0, 255, 0, 7])
    }
}
