import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Encoding: exact round trips for every layout and effort, interlacing, max pixel size, premultiplied input.
@Suite struct PNGEncodeTests {
    static func buffer(_ layout: PixelLayout, width: Int = 37, height: Int = 23, alphaMode: AlphaMode? = nil)
        -> PixelBuffer
    {
        var state: UInt32 = 99
        let bytes = (0..<(width * height * layout.bytesPerPixel)).map { _ -> UInt8 in
            state = state &* 1_103_515_245 &+ 12_345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
        return PixelBuffer(width: width, height: height, layout: layout, alphaMode: alphaMode, bytes: bytes)
    }

    @Test(arguments: [EncodeEffort.fast, .balanced, .best], [false, true])
    func exactRoundTripRGBA(effort: EncodeEffort, progressive: Bool) throws {
        let pixels = Self.buffer(.rgba8)
        let data = try PNGCoder.shared.encode(
            Image(pixels: pixels), as: .png, options: ImageEncodeOptions(effort: effort, progressive: progressive))
        #expect(Array(data.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(data[28] == (progressive ? 1 : 0), "IHDR interlace byte")
        let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.pixels == pixels)
    }

    @Test(arguments: [PixelLayout.gray8, .rgb8])
    func exactRoundTripOpaqueLayouts(layout: PixelLayout) throws {
        let pixels = Self.buffer(layout)
        let data = try PNGCoder.shared.encode(
            Image(pixels: pixels), as: .png, options: ImageEncodeOptions(effort: .fast))
        #expect(try PNGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels == pixels)
    }

    @Test func grayAlphaRoundTripsAsRGBA() throws {
        let pixels = Self.buffer(.grayAlpha8)
        let data = try PNGCoder.shared.encode(Image(pixels: pixels), as: .png, options: ImageEncodeOptions())
        let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels
        #expect(decoded.layout == .rgba8)
        let expected = stride(from: 0, to: pixels.bytes.count, by: 2).flatMap { i in
            [pixels.bytes[i], pixels.bytes[i], pixels.bytes[i], pixels.bytes[i + 1]]
        }
        #expect(decoded.bytes == expected)
    }

    @Test func fastIsLargerOrEqualButSameImageAsBest() throws {
        // A smooth gradient compresses: best must not be larger than fast.
        let bytes = (0..<(200 * 100)).flatMap { i -> [UInt8] in [UInt8(i % 200), UInt8(i / 200), 90] }
        let image = Image(pixels: PixelBuffer(width: 200, height: 100, layout: .rgb8, bytes: bytes))
        let fast = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(effort: .fast))
        let best = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(effort: .best))
        #expect(best.count <= fast.count)
        #expect(try PNGCoder.shared.decode(fast, options: ImageDecodeOptions()).pixels == image.pixels)
        #expect(try PNGCoder.shared.decode(best, options: ImageDecodeOptions()).pixels == image.pixels)
    }

    @Test func premultipliedInputIsStraightened() throws {
        let pixels = PixelBuffer(
            width: 2, height: 1, layout: .rgba8, alphaMode: .premultiplied, bytes: [64, 32, 0, 128, 0, 0, 0, 0])
        let data = try PNGCoder.shared.encode(Image(pixels: pixels), as: .png, options: ImageEncodeOptions())
        let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels
        #expect(decoded.alphaMode == .straight)
        #expect(decoded.pixel(x: 0, y: 0) == [128, 64, 0, 128])
        #expect(Array(decoded.pixel(x: 1, y: 0))[3] == 0)
    }

    @Test func maxPixelSizeDownscalesFirst() throws {
        let image = Image(pixels: Self.buffer(.rgb8, width: 100, height: 50))
        let data = try PNGCoder.shared.encode(
            image, as: .png, options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 20, height: 20)))
        let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.width == 20 && decoded.height == 10)
    }

    @Test func refusesOtherFormats() throws {
        #expect(PNGCoder.shared.canEncode(to: .png))
        #expect(!PNGCoder.shared.canEncode(to: .jpeg))
        let error = try #require(throws: ImageError.self) {
            try PNGCoder.shared.encode(Image(pixels: Self.buffer(.rgb8)), as: .jpeg, options: ImageEncodeOptions())
        }
        #expect(error.code == .noCoder)
    }
}
