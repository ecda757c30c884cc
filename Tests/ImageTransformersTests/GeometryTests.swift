import ImageCore
import Testing

@testable import ImageTransformers

@Suite("Flip, rotate, crop")
struct GeometryTests {
    /// A 3×2 image per layout whose pixels encode their coordinates, with row padding.
    static func labelled(_ layout: PixelLayout) -> PixelBuffer {
        Fixtures.buffer(width: 3, height: 2, layout: layout, padding: 5) { x, y in
            let id = UInt8(10 * y + x + 1)
            return (0..<layout.bytesPerPixel).map { c in id + UInt8(c * 50) }
        }
    }

    /// The coordinates label of a pixel of ``labelled(_:)``.
    static func label(_ pixel: [UInt8]) -> Int { Int(pixel[0]) - 1 }

    static let layouts: [PixelLayout] = [.rgba8, .rgb8, .gray8, .grayAlpha8]

    @Test("flips are exact permutations", arguments: layouts)
    func flips(layout: PixelLayout) throws {
        let source = Self.labelled(layout)
        let h = try FlipTransformer(horizontal: true).transform(Image(pixels: source), forKey: "k").pixels
        let v = try FlipTransformer(vertical: true).transform(Image(pixels: source), forKey: "k").pixels
        let hv = try FlipTransformer(horizontal: true, vertical: true).transform(Image(pixels: source), forKey: "k")
            .pixels
        for buffer in [h, v, hv] {
            #expect(buffer.width == 3 && buffer.height == 2 && buffer.layout == layout)
        }
        for y in 0..<2 {
            for x in 0..<3 {
                #expect(Fixtures.px(h, x, y) == Fixtures.px(source, 2 - x, y))
                #expect(Fixtures.px(v, x, y) == Fixtures.px(source, x, 1 - y))
                #expect(Fixtures.px(hv, x, y) == Fixtures.px(source, 2 - x, 1 - y))
            }
        }
    }

    @Test("quarter turns are exact permutations", arguments: layouts)
    func quarterTurns(layout: PixelLayout) throws {
        let source = Self.labelled(layout)
        // Source labels (10·y + x):   0  1  2
        //                            10 11 12
        let r90 = try RotateTransformer(angle: 90).transform(Image(pixels: source), forKey: "k").pixels
        let r180 = try RotateTransformer(angle: 180).transform(Image(pixels: source), forKey: "k").pixels
        let r270 = try RotateTransformer(angle: -90).transform(Image(pixels: source), forKey: "k").pixels
        #expect(r90.width == 2 && r90.height == 3 && r90.layout == layout)
        #expect(r270.width == 2 && r270.height == 3)
        #expect(r180.width == 3 && r180.height == 2)
        let labels90 = Fixtures.rows(r90).map { $0.map(Self.label) }
        let labels180 = Fixtures.rows(r180).map { $0.map(Self.label) }
        let labels270 = Fixtures.rows(r270).map { $0.map(Self.label) }
        #expect(labels90 == [[10, 0], [11, 1], [12, 2]])  // clockwise: the bottom-left pixel comes to the top-left
        #expect(labels180 == [[12, 11, 10], [2, 1, 0]])
        #expect(labels270 == [[2, 12], [1, 11], [0, 10]])
        // Whole pixels move, not just the first channel.
        #expect(Fixtures.px(r90, 0, 0) == Fixtures.px(source, 0, 1))
    }

    @Test("quarter turns of a large image (tiled path) match the definition")
    func largeQuarterTurn() throws {
        let source = Fixtures.buffer(width: 131, height: 77, layout: .rgba8) { x, y in
            [UInt8(x & 255), UInt8(y & 255), UInt8((x * 7 + y) & 255), 255]
        }
        let r90 = try RotateTransformer(angle: 90).transform(Image(pixels: source), forKey: "k").pixels
        let r270 = try RotateTransformer(angle: 270).transform(Image(pixels: source), forKey: "k").pixels
        #expect(r90.width == 77 && r90.height == 131)
        var mismatches = 0
        for y in 0..<131 {
            for x in 0..<77 {
                if Fixtures.px(r90, x, y) != Fixtures.px(source, y, 76 - x) { mismatches += 1 }
                if Fixtures.px(r270, x, y) != Fixtures.px(source, 130 - y, x) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
        let back = try RotateTransformer(angle: 270).transform(Image(pixels: r90), forKey: "k").pixels
        #expect(back.bytes == PixelBuffer(width: 131, height: 77, layout: .rgba8, bytes: Array(source.bytes)).bytes)
    }

    @Test("crop copies the rectangle exactly", arguments: layouts)
    func crop(layout: PixelLayout) throws {
        let source = Fixtures.buffer(width: 6, height: 5, layout: layout, padding: 3) { x, y in
            (0..<layout.bytesPerPixel).map { c in UInt8(10 * y + x + 50 * c) }
        }
        let out = try CropTransformer(x: 1, y: 2, width: 3, height: 2).transform(Image(pixels: source), forKey: "k")
            .pixels
        #expect(out.width == 3 && out.height == 2 && out.layout == layout)
        for y in 0..<2 {
            for x in 0..<3 { #expect(Fixtures.px(out, x, y) == Fixtures.px(source, x + 1, y + 2)) }
        }
    }

    @Test("crop rectangles are clamped to the image")
    func cropClamping() throws {
        let source = Fixtures.buffer(width: 6, height: 5, layout: .gray8) { x, y in [UInt8(10 * y + x)] }
        let image = Image(pixels: source)
        let topLeft = try CropTransformer(x: -2, y: -3, width: 4, height: 5).transform(image, forKey: "k").pixels
        #expect(topLeft.width == 2 && topLeft.height == 2)
        #expect(Fixtures.rows(topLeft) == [[[0], [1]], [[10], [11]]])
        let bottomRight = try CropTransformer(x: 4, y: 3, width: 100, height: 100).transform(image, forKey: "k").pixels
        #expect(Fixtures.rows(bottomRight) == [[[34], [35]], [[44], [45]]])
        let huge = try CropTransformer(x: 0, y: 0, width: .max, height: .max).transform(image, forKey: "k").pixels
        #expect(huge.width == 6 && huge.height == 5)
    }

    @Test("crops that miss the image or are empty throw transformFailed")
    func cropErrors() {
        let image = Image(pixels: PixelBuffer(width: 4, height: 4, layout: .rgba8))
        for crop in [
            CropTransformer(x: 4, y: 0, width: 2, height: 2), CropTransformer(x: 0, y: 0, width: 0, height: 2),
            CropTransformer(x: -10, y: 0, width: 5, height: 2), CropTransformer(x: 0, y: 0, width: -1, height: 2),
        ] {
            let error = #expect(throws: ImageError.self) { try crop.transform(image, forKey: "k") }
            #expect(error?.code == .transformFailed)
            #expect(error?.stage == .transform)
        }
    }

    @Test("arbitrary angles: fitted size, transparent corners, centre kept, alpha introduced")
    func arbitraryAngle() throws {
        let source = Fixtures.buffer(width: 100, height: 100, layout: .rgb8) { _, _ in [200, 100, 50] }
        let fitted = try RotateTransformer(angle: 45).transform(Image(pixels: source), forKey: "k").pixels
        #expect(fitted.width == 142 && fitted.height == 142)
        #expect(fitted.layout == .rgba8)
        #expect(Fixtures.px(fitted, 0, 0) == [0, 0, 0, 0])
        #expect(Fixtures.px(fitted, 141, 141)[3] == 0)
        #expect(Fixtures.px(fitted, 71, 71) == [200, 100, 50, 255])
        // The tips of the diamond touch the middle of each edge; anti-aliased pixels keep the colour (no halo).
        var partial = 0
        for y in 0..<142 {
            for x in 0..<142 {
                let p = Fixtures.px(fitted, x, y)
                if p[3] > 0 && p[3] < 255 {
                    partial += 1
                    #expect(abs(Int(p[0]) - 200) <= 1 && abs(Int(p[1]) - 100) <= 1 && abs(Int(p[2]) - 50) <= 1)
                }
            }
        }
        #expect(partial > 100)
        let cropped = try RotateTransformer(angle: 45, fitSize: false).transform(Image(pixels: source), forKey: "k")
            .pixels
        #expect(cropped.width == 100 && cropped.height == 100)
        #expect(Fixtures.px(cropped, 0, 0)[3] == 0)
        #expect(Fixtures.px(cropped, 50, 50) == [200, 100, 50, 255])

        let gray = Fixtures.buffer(width: 10, height: 20, layout: .gray8) { _, _ in [90] }
        let grayOut = try RotateTransformer(angle: 30).transform(Image(pixels: gray), forKey: "k").pixels
        #expect(grayOut.layout == .grayAlpha8)
        // 10·cos30 + 20·sin30 = 18.66, 10·sin30 + 20·cos30 = 22.32
        #expect(grayOut.width == 19 && grayOut.height == 23)
    }

    @Test("the bilinear path agrees with the exact quarter turn at 90°")
    func bilinearMatchesPermutation() throws {
        let source = Fixtures.randomOpaque(width: 9, height: 6, seed: 7)
        let exact = PixelPermutation.apply(.rotate90, to: source)
        let sampled = try RotateTransformer.rotateBilinear(source, degrees: 90, fitSize: true)
        #expect(sampled.width == exact.width && sampled.height == exact.height)
        for y in 0..<exact.height {
            for x in 0..<exact.width {
                let a = Fixtures.px(exact, x, y)
                let b = Fixtures.px(sampled, x, y)
                for c in 0..<4 { #expect(abs(Int(a[c]) - Int(b[c])) <= 1, "(\(x),\(y))") }
            }
        }
    }

    @Test("non-finite angles throw")
    func badAngle() {
        let image = Image(pixels: PixelBuffer(width: 2, height: 2, layout: .rgba8))
        #expect(throws: ImageError.self) { try RotateTransformer(angle: .nan).transform(image, forKey: "k") }
    }
}
