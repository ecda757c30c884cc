import Foundation
import ImageCore
import ImageTransformers
import Testing

@Suite("Blur")
struct BlurTests {
    func blur(_ buffer: PixelBuffer, _ sigma: Double) throws -> PixelBuffer {
        try BlurTransformer(radius: sigma).transform(Image(pixels: buffer), forKey: "k").pixels
    }

    @Test("a constant image is unchanged", arguments: [0.5, 2, 7.3, 40])
    func constant(sigma: Double) throws {
        let rgba = Fixtures.buffer(width: 37, height: 29, padding: 2) { _, _ in [10, 120, 250, 77] }
        let out = try blur(rgba, sigma)
        #expect(out.layout == .rgba8)
        for y in 0..<29 { for x in 0..<37 { #expect(Fixtures.px(out, x, y) == [10, 120, 250, 77]) } }
        let gray = Fixtures.buffer(width: 50, height: 3, layout: .gray8) { _, _ in [201] }
        let grayOut = try blur(gray, sigma)
        #expect(grayOut.layout == .gray8 && grayOut.bytes.allSatisfy { $0 == 201 })
    }

    /// A white 9×9 square in the middle of an 81×81 black gray image.
    static let square = Fixtures.buffer(width: 81, height: 81, layout: .gray8) { x, y in
        (36..<45).contains(x) && (36..<45).contains(y) ? [255] : [0]
    }

    @Test("mass is preserved and the result approximates an exact Gaussian")
    func gaussian() throws {
        let sigma = 3.0
        let out = try blur(Self.square, sigma)
        let massIn = Self.square.bytes.reduce(0) { $0 + Int($1) }
        let massOut = out.bytes.reduce(0) { $0 + Int($1) }
        #expect(abs(Double(massOut - massIn)) / Double(massIn) < 0.01, "mass \(massIn) → \(massOut)")
        // Exact Gaussian, separable, in Double; the square is far from the edges so no edge handling matters.
        let taps = Int(4 * sigma)
        let kernel = (-taps...taps).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let norm = kernel.reduce(0, +)
        func source(_ x: Int, _ y: Int) -> Double { (36..<45).contains(x) && (36..<45).contains(y) ? 255 : 0 }
        var worst = 0.0
        for y in 20..<61 {
            for x in 20..<61 {
                var value = 0.0
                for (i, wy) in kernel.enumerated() {
                    for (j, wx) in kernel.enumerated() { value += wy * wx * source(x + j - taps, y + i - taps) }
                }
                value /= norm * norm
                worst = max(worst, abs(value - Double(Fixtures.px(out, x, y)[0])))
            }
        }
        #expect(worst <= 4, "largest difference from the exact Gaussian: \(worst)")
        let peak = Int(Fixtures.px(out, 40, 40)[0])
        #expect(peak < 255 && peak > 150)
    }

    @Test("a radius much larger than the image works and tends to a flat image")
    func largeRadius() throws {
        let small = Fixtures.buffer(width: 5, height: 4, layout: .rgb8) { x, y in [UInt8(x * 60), UInt8(y * 80), 9] }
        let out = try blur(small, 500)
        #expect(out.width == 5 && out.height == 4 && out.layout == .rgb8)
        let reds = (0..<4).flatMap { y in (0..<5).map { x in Int(Fixtures.px(out, x, y)[0]) } }
        #expect(reds.max()! - reds.min()! <= 2, "\(reds)")
        #expect(reds.allSatisfy { (0...240).contains($0) })
        let tiny = try blur(Fixtures.buffer(width: 1, height: 1) { _, _ in [1, 2, 3, 4] }, 100)
        #expect(Fixtures.px(tiny, 0, 0) == [1, 2, 3, 4])
    }

    @Test("blurring in premultiplied alpha gives no dark halo")
    func noHalo() throws {
        let source = Fixtures.buffer(width: 30, height: 30) { x, y in
            (10..<20).contains(x) && (10..<20).contains(y) ? [255, 255, 255, 255] : [0, 0, 0, 0]
        }
        let out = try blur(source, 2.5)
        var partial = 0
        for y in 0..<30 {
            for x in 0..<30 {
                let p = Fixtures.px(out, x, y)
                if p[3] > 0 { #expect(p[0] >= 254 && p[1] >= 254 && p[2] >= 254, "(\(x),\(y)) \(p)") }
                if p[3] > 0 && p[3] < 255 { partial += 1 }
            }
        }
        #expect(partial > 40)
    }

    @Test("radius 0 keeps the pixels; invalid radii throw")
    func edgeCases() throws {
        let source = Fixtures.randomOpaque(width: 6, height: 6, seed: 3)
        let same = try BlurTransformer(radius: 0).transform(Image(pixels: source), forKey: "k")
        #expect(same.pixels.bytes == source.bytes && same.metadata.isTransformed)
        for radius in [-1, Double.nan, .infinity] {
            let error = #expect(throws: ImageError.self) {
                try BlurTransformer(radius: radius).transform(Image(pixels: source), forKey: "k")
            }
            #expect(error?.code == .transformFailed)
        }
    }

    @Test("a large image (parallel stripes and column strips) blurs like its tiles")
    func largeImage() throws {
        let big = Fixtures.buffer(width: 700, height: 500) { x, y in
            [UInt8((x * 3) & 255), UInt8((y * 2) & 255), UInt8((x ^ y) & 255), 255]
        }
        let out = try blur(big, 2)
        let tile = Fixtures.buffer(width: 60, height: 60) { x, y in Fixtures.px(big, x + 300, y + 230) }
        let tileOut = try blur(tile, 2)
        for y in 15..<45 {
            for x in 15..<45 {
                let a = Fixtures.px(out, x + 300, y + 230)
                let b = Fixtures.px(tileOut, x, y)
                for c in 0..<4 { #expect(abs(Int(a[c]) - Int(b[c])) <= 1) }
            }
        }
    }
}
