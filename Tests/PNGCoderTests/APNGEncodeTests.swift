import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Encoding animated images as APNG, read back by the decoder (and by the structure other decoders expect).
@Suite struct APNGEncodeTests {
    static func frames(_ count: Int, width: Int = 6, height: Int = 4, layout: PixelLayout = .rgba8) -> [ImageFrame] {
        (0..<count).map { index in
            let bytes = (0..<width * height * layout.bytesPerPixel).map {
                UInt8(truncatingIfNeeded: $0 * 7 + index * 50)
            }
            return ImageFrame(
                pixels: PixelBuffer(width: width, height: height, layout: layout, bytes: bytes),
                duration: [0.04, 0.5, 2.0, 1000.0][index % 4])
        }
    }

    @Test func animationsRoundTripExactly() throws {
        for layout in [PixelLayout.rgba8, .rgb8, .gray8, .grayAlpha8] {
            let frames = Self.frames(4, layout: layout)
            let image = Image(frames: frames, loopCount: 3, format: .png)
            let data = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(effort: .fast))
            #expect(PNGCoder.shared.probe(data)?.frameCount == 4)
            let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
            #expect(decoded.frameCount == 4, "\(layout)")
            #expect(decoded.loopCount == 3)
            #expect(decoded.frames.map(\.duration) == [0.04, 0.5, 2.0, 1000.0])
            for (index, frame) in decoded.frames.enumerated() {
                #expect(
                    frame.pixels.straightRGBABytes() == frames[index].pixels.straightRGBABytes(), "\(layout) \(index)")
            }
        }
    }

    @Test func theFirstFrameIsTheDefaultImageSoAnyPNGDecoderShowsIt() throws {
        let frames = Self.frames(3)
        let data = try PNGCoder.shared.encode(Image(frames: frames), as: .png, options: ImageEncodeOptions())
        // Without acTL, what remains is the still a non-APNG decoder sees: the first frame.
        var stripped = Data(data.prefix(8))
        var offset = 8
        while offset + 12 <= data.count {
            let length = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            if !["acTL", "fcTL", "fdAT"].contains(type) { stripped += data[offset..<offset + 12 + length] }
            offset += 12 + length
        }
        let still = try PNGCoder.shared.decode(stripped, options: ImageDecodeOptions())
        #expect(still.frameCount == 1)
        #expect(still.pixels.straightRGBABytes() == frames[0].pixels.straightRGBABytes())
    }

    @Test func mixedLayoutsShareTheWidestLayout() throws {
        let frames = [Self.frames(1, layout: .gray8)[0], Self.frames(2, layout: .rgba8)[1]]
        let data = try PNGCoder.shared.encode(Image(frames: frames), as: .png, options: ImageEncodeOptions())
        let decoded = try PNGCoder.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frames[0].pixels.straightRGBABytes() == frames[0].pixels.straightRGBABytes())
        #expect(decoded.frames[1].pixels.straightRGBABytes() == frames[1].pixels.straightRGBABytes())
    }

    @Test func firstFrameOnlyAndMaxPixelSizeAndAdam7() throws {
        let image = Image(frames: Self.frames(3, width: 8, height: 4))
        let still = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(firstFrameOnly: true))
        #expect(PNGCoder.shared.probe(still)?.frameCount == 1)
        let small = try PNGCoder.shared.encode(
            image, as: .png, options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 4, height: 4)))
        let decoded = try PNGCoder.shared.decode(small, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.width == 4 && decoded.height == 2 && decoded.frameCount == 3)
        let interlaced = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(progressive: true))
        let back = try PNGCoder.shared.decode(interlaced, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(back.frames.map { $0.pixels.straightRGBABytes() } == image.frames.map { $0.pixels.straightRGBABytes() })
    }

    @Test func decodedAnimationsReEncodeThroughTheirProvider() throws {
        let source = try PNGCoder.shared.encode(
            Image(frames: Self.frames(5), loopCount: 2), as: .png, options: ImageEncodeOptions())
        let lazy = try PNGCoder.shared.decode(source, options: ImageDecodeOptions())
        #expect(lazy.frames.count == 1 && lazy.frameCount == 5)
        let again = try PNGCoder.shared.encode(lazy, as: .png, options: ImageEncodeOptions())
        let decoded = try PNGCoder.shared.decode(again, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 5 && decoded.loopCount == 2)
        #expect(try decoded.frames == (0..<5).map { try lazy.frame(at: $0) })
    }

    @Test func framesOverTheEncodeBudgetAreRefused() throws {
        var budget = AnimationBudget()
        budget.maxFrameCount = 2
        let image = Image(frames: Self.frames(3), animationBudget: budget)
        #expect {
            _ = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions())
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        budget.onExceeded = .firstFrameOnly
        let first = try PNGCoder.shared.encode(
            Image(frames: Self.frames(3), animationBudget: budget), as: .png, options: ImageEncodeOptions())
        #expect(PNGCoder.shared.probe(first)?.frameCount == 1)
    }

    @Test func delaysThatDoNotFitMillisecondsKeepTheirValue() {
        // Checked through the round trip above for 1000 s; the precision steps are hundredths, then seconds.
        let frames =
            [ImageFrame(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8), duration: 700)]
            + [ImageFrame(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8), duration: 86_400)]
        let decoded = try? PNGCoder.shared.decode(
            PNGCoder.shared.encode(Image(frames: frames), as: .png, options: ImageEncodeOptions()),
            options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded?.frames.map(\.duration) == [700, 65_535])
    }
}
