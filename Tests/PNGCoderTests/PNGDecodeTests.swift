import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Decoding every colour type and bit depth (synthesized by ``PNGFixtures``, independent of libpng), plus options.
@Suite struct PNGDecodeTests {
    /// Deterministic samples below `1 << bitDepth` (16-bit values are multiples of 257, so 8-bit output is exact).
    static func samples(count: Int, bitDepth: Int, seed: UInt32 = 7) -> [UInt16] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            let value = UInt16(truncatingIfNeeded: state >> 16)
            return bitDepth == 16 ? UInt16(value & 0xFF) * 257 : value & UInt16((1 << bitDepth) - 1)
        }
    }

    /// The 8-bit value a sample of `bitDepth` must decode to.
    static func eight(_ value: UInt16, bitDepth: Int) -> UInt8 {
        switch bitDepth {
        case 16: UInt8(value / 257)
        case 8: UInt8(value)
        default: UInt8(Int(value) * 255 / ((1 << bitDepth) - 1))
        }
    }

    static let grayDepths = [1, 2, 4, 8, 16]

    @Test(arguments: grayDepths, [false, true])
    func grayAllDepths(bitDepth: Int, interlaced: Bool) throws {
        let (w, h) = (13, 11)
        let values = Self.samples(count: w * h, bitDepth: bitDepth)
        let data = PNGFixtures.make(
            width: w, height: h, bitDepth: bitDepth, colorType: .gray, samples: values, interlaced: interlaced)
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.pixels.layout == .gray8)
        #expect(image.width == w && image.height == h)
        #expect(image.pixels.bytes == values.map { Self.eight($0, bitDepth: bitDepth) })
    }

    @Test(arguments: [8, 16], [PNGFixtures.ColorType.rgb, .rgba, .grayAlpha])
    func colourAndAlphaTypes(bitDepth: Int, colorType: PNGFixtures.ColorType) throws {
        let (w, h) = (9, 7)
        let values = Self.samples(count: w * h * colorType.channels, bitDepth: bitDepth)
        let data = PNGFixtures.make(width: w, height: h, bitDepth: bitDepth, colorType: colorType, samples: values)
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        let expected: [UInt8]
        switch colorType {
        case .rgb:
            #expect(image.pixels.layout == .rgb8)
            expected = values.map { Self.eight($0, bitDepth: bitDepth) }
        case .rgba:
            #expect(image.pixels.layout == .rgba8)
            expected = values.map { Self.eight($0, bitDepth: bitDepth) }
        default:  // gray+alpha decodes to RGBA with the gray replicated
            #expect(image.pixels.layout == .rgba8)
            expected = stride(from: 0, to: values.count, by: 2).flatMap { i -> [UInt8] in
                let g = Self.eight(values[i], bitDepth: bitDepth)
                return [g, g, g, Self.eight(values[i + 1], bitDepth: bitDepth)]
            }
        }
        #expect(image.pixels.alphaMode == (colorType == .rgb ? .none : .straight))
        // Opaque pixels must match exactly; libpng may rewrite the colour of fully transparent ones.
        let channels = image.pixels.layout.bytesPerPixel
        for p in 0..<(w * h) where channels == 3 || expected[p * 4 + 3] != 0 {
            #expect(
                Array(image.pixels.bytes[p * channels..<(p + 1) * channels])
                    == Array(expected[p * channels..<(p + 1) * channels]))
        }
    }

    @Test(arguments: [1, 2, 4, 8], [false, true])
    func paletteWithAndWithoutTransparency(bitDepth: Int, withTRNS: Bool) throws {
        let (w, h) = (10, 6)
        let entries = 1 << bitDepth
        var palette: [UInt8] = []
        for entry in 0..<entries {
            let r = UInt8(truncatingIfNeeded: entry * 37)
            let g = UInt8(truncatingIfNeeded: entry * 91)
            palette += [r, g, UInt8(255 - entry)]
        }
        let alphas: [UInt8] = (0..<min(entries, 4)).map { UInt8($0 * 80) }  // entries past the tRNS list are opaque
        let indices = Self.samples(count: w * h, bitDepth: bitDepth)
        let data = PNGFixtures.make(
            width: w, height: h, bitDepth: bitDepth, colorType: .palette, samples: indices, palette: palette,
            transparency: withTRNS ? alphas : nil)
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.pixels.layout == (withTRNS ? .rgba8 : .rgb8))
        let channels = image.pixels.layout.bytesPerPixel
        for (p, index) in indices.enumerated() {
            let i = Int(index)
            let alpha = withTRNS && i < alphas.count ? alphas[i] : 255
            let got = Array(image.pixels.bytes[p * channels..<(p + 1) * channels])
            if withTRNS { #expect(got[3] == alpha) }
            if alpha != 0 { #expect(Array(got[0..<3]) == Array(palette[i * 3..<i * 3 + 3])) }
        }
    }

    @Test func grayWithTRNSBecomesRGBA() throws {
        let values: [UInt16] = [0, 50, 100, 50, 200, 50]
        let data = PNGFixtures.make(
            width: 3, height: 2, bitDepth: 8, colorType: .gray, samples: values, transparency: [0, 50])
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.pixels.layout == .rgba8)
        #expect(image.pixels.pixel(x: 0, y: 0) == [0, 0, 0, 255])
        #expect(Array(image.pixels.pixel(x: 1, y: 0))[3] == 0)
        #expect(image.pixels.pixel(x: 1, y: 1) == [200, 200, 200, 255])
    }

    @Test func thumbnailAndScaleDownAreaAverage() throws {
        // 64x32 RGB in 4x4 blocks of one colour each: a 16x8 thumbnail must reproduce each block's colour.
        let (w, h) = (64, 32)
        var values: [UInt16] = []
        for y in 0..<h {
            for x in 0..<w { values += [UInt16((x / 4) * 15), UInt16((y / 4) * 30), 128] }
        }
        let data = PNGFixtures.make(width: w, height: h, bitDepth: 8, colorType: .rgb, samples: values)
        let thumb = try PNGCoder.shared.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 16, height: 16)))
        #expect(thumb.width == 16 && thumb.height == 8)
        #expect(thumb.pixels.pixel(x: 5, y: 3) == [75, 90, 128])
        #expect(thumb.metadata.sourcePixelWidth == 64 && thumb.metadata.sourcePixelHeight == 32)

        let stretched = try PNGCoder.shared.decode(
            data,
            options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 8, height: 8), preserveAspectRatio: false))
        #expect(stretched.width == 8 && stretched.height == 8)

        let budget = try PNGCoder.shared.decode(data, options: ImageDecodeOptions(scaleDownLimitBytes: 64 * 32))
        #expect(budget.width * budget.height * 4 <= 64 * 32)
        #expect(budget.width < 64)
    }

    @Test func pixelBudgetFromHeaderBeforeAllocating() throws {
        let bomb = PNGFixtures.headerOnly(width: 60_000, height: 60_000)
        #expect(
            PNGCoder.shared.probe(bomb) == ImageProperties(format: .png, width: 60_000, height: 60_000, frameCount: 1))
        let error = try #require(throws: ImageError.self) {
            try PNGCoder.shared.decode(bomb, options: ImageDecodeOptions())
        }
        #expect(error.code == .imageTooLarge)
        // A budget of 100 pixels refuses a 13x11 image that decodes fine otherwise.
        let small = PNGFixtures.make(
            width: 13, height: 11, bitDepth: 8, colorType: .gray, samples: Self.samples(count: 143, bitDepth: 8))
        let tight = try #require(throws: ImageError.self) {
            try PNGCoder.shared.decode(small, options: ImageDecodeOptions(maxPixelCount: 100))
        }
        #expect(tight.code == .imageTooLarge)
    }

    @Test func truncatedAndGarbageInputThrowImageError() throws {
        let good = PNGFixtures.make(
            width: 40, height: 40, bitDepth: 8, colorType: .rgb, samples: Self.samples(count: 4800, bitDepth: 8))
        var cuts = [0, 1, 8, 20, 33, good.count / 2, good.count - 20]
        cuts = cuts.filter { $0 < good.count }
        for cut in cuts {
            let error = try #require(throws: ImageError.self) {
                try PNGCoder.shared.decode(good.prefix(cut), options: ImageDecodeOptions())
            }
            #expect(error.code == .badImageData, "cut at \(cut)")
            #expect(error.stage == .decode)
        }
        var corrupt = good
        corrupt[40] ^= 0xFF  // inside IHDR: CRC mismatch on a critical chunk
        #expect(throws: ImageError.self) { try PNGCoder.shared.decode(corrupt, options: ImageDecodeOptions()) }
        let garbage =
            Data(PNGFixtures.make(width: 1, height: 1, bitDepth: 8, colorType: .gray, samples: [0]).prefix(8))
            + Data((0..<500).map { UInt8($0 * 7 & 0xFF) })
        #expect(throws: ImageError.self) { try PNGCoder.shared.decode(garbage, options: ImageDecodeOptions()) }
        #expect(!PNGCoder.shared.canDecode(Data("GIF89a".utf8)))
        #expect(PNGCoder.shared.probe(Data([1, 2, 3])) == nil)
    }

    @Test func registeredInCodersManagerAndDecodedThroughIt() throws {
        let manager = CodersManager()
        manager.addCoder(PNGCoder.shared)
        let data = PNGFixtures.make(
            width: 5, height: 4, bitDepth: 8, colorType: .rgba, samples: Self.samples(count: 80, bitDepth: 8))
        #expect(manager.canDecode(data))
        let image = try manager.decode(data, options: ImageDecodeOptions())
        #expect(image.format == .png && image.width == 5 && image.height == 4)
        CodersManager.shared.addCoder(PNGCoder.shared)
        #expect(try CodersManager.shared.decode(data, options: ImageDecodeOptions()).pixels == image.pixels)
        let bomb = try #require(throws: ImageError.self) {
            try manager.decode(
                PNGFixtures.headerOnly(width: 1_000_000, height: 1_000_000), options: ImageDecodeOptions())
        }
        #expect(bomb.code == .imageTooLarge)
    }

    /// Adam7 must decode to the same pixels as the plain file; catches libpng 1.6.39's simplified-API bug with
    /// interlaced 16-bit images (worked around in PNGDecoder).
    @Test(arguments: [PNGFixtures.ColorType.gray, .rgb, .rgba, .grayAlpha], [8, 16])
    func interlacedEqualsPlain(colorType: PNGFixtures.ColorType, bitDepth: Int) throws {
        for size in [
            PixelSize(width: 1, height: 1), PixelSize(width: 13, height: 11), PixelSize(width: 40, height: 33),
        ] {
            let values = Self.samples(count: size.width * size.height * colorType.channels, bitDepth: bitDepth)
            let files = [true, false].map {
                PNGFixtures.make(
                    width: size.width, height: size.height, bitDepth: bitDepth, colorType: colorType, samples: values,
                    interlaced: $0)
            }
            let interlaced = try PNGCoder.shared.decode(files[0], options: ImageDecodeOptions())
            let plain = try PNGCoder.shared.decode(files[1], options: ImageDecodeOptions())
            #expect(interlaced.pixels == plain.pixels, "\(colorType) \(bitDepth)-bit \(size)")
        }
    }
}
