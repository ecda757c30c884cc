import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import PNGCoder

/// Shrink-on-load: a PNG thumbnail is reduced row by row while decoding and must equal, byte for byte, the full
/// decode followed by `areaResampled` (the same pixels, the same reducer), holding a strip of rows — or, on the
/// fast reader, the inflated image when it is under the one-shot limit.
@Suite("PNG thumbnails")
struct PNGThumbnailTests {
    /// The thumbnail options the comparison runs: aspect-fit to a third, a 1-pixel fit, and a stretched fill.
    static func options(width: Int, height: Int) -> [ImageDecodeOptions] {
        [
            ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: max(1, width / 3), height: max(1, height / 3))),
            ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 1, height: 1)),
            ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 5, height: 7), preserveAspectRatio: false),
        ]
    }

    static func expectSameAsFullDecode(_ data: Data, _ label: String) throws {
        let full = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        for options in options(width: full.width, height: full.height) {
            let target = options.targetSize(forSourceWidth: full.width, height: full.height)
            let thumbnail = try PNGCoder.shared.decode(data, options: options)
            let expected = full.pixels.areaResampled(width: target.width, height: target.height)
            #expect(thumbnail.pixels == expected, "\(label) → \(target)")
            #expect(thumbnail.metadata.sourcePixelWidth == full.width, "\(label)")
        }
    }

    @Test(
        "every corpus PNG (all colour types, bit depths, gamma, tRNS, palettes) reduces while decoding to the full decode's resample",
        .enabled(if: Corpus.shouldRun, "needs the conformance corpus"))
    func corpusMatchesFullDecode() throws {
        let rows = try ["png/pngsuite", "png/libpng", "png/misc"].flatMap {
            try Corpus.requireExpectations(under: $0, extensions: ["png"])
        }
        var rowWise = 0
        for row in rows where row.verdict == .ok && !row.isAnimatedPNG && row.width > 1 && row.height > 1 {
            let data = try Data(contentsOf: row.url)
            try Self.expectSameAsFullDecode(data, "\(row)")
            let chunks = try PNGDecoder.header(of: data, scanAll: true)
            if !chunks.interlaced { rowWise += 1 }
        }
        #expect(rowWise >= 50, "only \(rowWise) non-interlaced files took the row path")
    }

    @Test(
        "every colour type and bit depth of generated files, plain and interlaced",
        arguments: PNGFixtures.ColorType.allCases)
    func generatedMatchFullDecode(colorType: PNGFixtures.ColorType) throws {
        for bitDepth in [1, 2, 4, 8, 16] where Self.allowed(colorType, bitDepth) {
            for interlaced in [false, true] {
                let (width, height) = (37, 23)
                let maximum = (1 << bitDepth) - 1
                let samples = (0..<(width * height * colorType.channels)).map { UInt16(($0 * 7919) % (maximum + 1)) }
                let palette = colorType == .palette ? (0..<(3 << bitDepth)).map { UInt8($0 * 37 & 255) } : nil
                let transparency: [UInt8]? = colorType == .palette ? [0, 128, 255] : nil
                let data = PNGFixtures.make(
                    width: width, height: height, bitDepth: bitDepth, colorType: colorType, samples: samples,
                    palette: palette, transparency: transparency, interlaced: interlaced)
                try Self.expectSameAsFullDecode(data, "\(colorType) \(bitDepth)-bit interlaced: \(interlaced)")
            }
        }
    }

    static func allowed(_ type: PNGFixtures.ColorType, _ depth: Int) -> Bool {
        switch type {
        case .gray: true
        case .palette: depth <= 8
        case .rgb, .grayAlpha, .rgba: depth >= 8
        }
    }

    @Test("a large thumbnail holds one strip of rows, or the inflated image only up to the one-shot limit")
    func holdsAStripNotTheImage() throws {
        let (width, height) = (1600, 1200)
        let pixels = PixelBuffer(
            width: width, height: height, layout: .rgba8, alphaMode: .straight,
            bytes: (0..<(width * height * 4)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let data = try PNGCoder.shared.encode(
            Image(pixels: pixels), as: .png, options: ImageEncodeOptions(effort: .fast))
        let target = PixelSize(width: 256, height: 192)
        let expected = pixels.areaResampled(width: 256, height: 192)
        let inflated = height * (width * 4 + 1)

        // Streamed (an image over the one-shot limit): a strip of rows and the row above it.
        let streamed = try #require(
            try PNGRowDecoder.decode(data, target: target, maxPixels: .max, wholeInflateLimit: inflated - 1))
        #expect(streamed.1.fast)
        #expect(streamed.1.stripBytes <= PNGRowDecoder.stripBytes + 2 * (width * 4 + 1))
        #expect(streamed.0 == expected)

        // At once (at most the limit): the inflated image, nothing more.
        let whole = try #require(
            try PNGRowDecoder.decode(data, target: target, maxPixels: .max, wholeInflateLimit: inflated))
        #expect(whole.1.fast && whole.1.stripBytes == inflated)
        #expect(whole.0 == expected)
        #expect(PNGFastReader.wholeInflateLimit <= 16 << 20)

        // libpng's row reader (16-bit samples are its): one strip.
        let deep = PNGFixtures.make(
            width: width, height: 40, bitDepth: 16, colorType: .rgb,
            samples: (0..<(width * 40 * 3)).map { UInt16(truncatingIfNeeded: $0 &* 40_503) })
        let libpng = try #require(
            try PNGRowDecoder.decode(deep, target: PixelSize(width: 64, height: 2), maxPixels: .max))
        #expect(!libpng.1.fast && libpng.1.stripBytes <= PNGRowDecoder.stripBytes)
    }

    @Test("hostile input on the row path: truncated data and an over-budget header fail with typed errors")
    func hostileRowPath() throws {
        let (width, height) = (64, 48)
        let data = PNGFixtures.make(
            width: width, height: height, bitDepth: 8, colorType: .rgb,
            samples: (0..<(width * height * 3)).map { UInt16($0 & 255) })
        let thumbnail = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 8, height: 8))
        // Cut inside the image data: the full decode and the row path both refuse it.
        let truncated = data.prefix(data.count / 2)
        let error = #expect(throws: ImageError.self) { try PNGCoder.shared.decode(truncated, options: thumbnail) }
        #expect(error?.code == .badImageData && error?.stage == .decode)
        #expect(throws: ImageError.self) { try PNGCoder.shared.decode(truncated, options: ImageDecodeOptions()) }
        var small = thumbnail
        small.maxPixelCount = width * height - 1
        let budget = #expect(throws: ImageError.self) { try PNGCoder.shared.decode(data, options: small) }
        #expect(budget?.code == .imageTooLarge)
        // The reader's own budget check (the coder checks first; this is the C side's guard).
        let refused = #expect(throws: ImageError.self) {
            _ = try PNGRowDecoder.decode(data, target: PixelSize(width: 8, height: 8), maxPixels: 100)
        }
        #expect(refused?.code == .imageTooLarge)
    }
}
