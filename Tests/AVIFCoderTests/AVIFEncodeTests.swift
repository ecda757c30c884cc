import AVIFCoder
import Foundation
import ImageCore
import Testing

/// Encoding as a cache serializer or a thumbnail service would: quality, speed, lossless, alpha, animations.
@Suite(.enabled(if: AVIFCoder.hasEncoder, "this libavif has no AV1 encoder"))
struct AVIFEncodeTests {
    let coder = AVIFCoder.shared

    @Test func losslessRoundTripKeepsEveryPixelAndAlpha() throws {
        let image = rgbaImage(width: 40, height: 30, alpha: true)
        let data = try coder.encode(image, as: .avif, options: ImageEncodeOptions(effort: .fast, lossless: true))
        #expect(ImageFormat.detect(data) == .avif)
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.pixels.layout == .rgba8 && decoded.pixels.bytes == image.pixels.bytes)
    }

    @Test func lossyEncodeIsCloseSmallerAndFollowsQuality() throws {
        let image = rgbaImage(width: 96, height: 64, alpha: false)
        let high = try coder.encode(image, as: .avif, options: ImageEncodeOptions(quality: 0.9, effort: .fast))
        let low = try coder.encode(image, as: .avif, options: ImageEncodeOptions(quality: 0.2, effort: .fast))
        #expect(low.count < high.count)
        #expect(high.count < 96 * 64 * 3)
        let decoded = try coder.decode(high, options: .init())
        // Opaque RGBA input is written without an alpha plane and comes back as RGB.
        #expect(decoded.pixels.layout == .rgb8)
        let reference = PixelBuffer(
            width: 96, height: 64, layout: .rgb8,
            bytes: stride(from: 0, to: image.pixels.bytes.count, by: 4).flatMap { image.pixels.bytes[$0..<$0 + 3] })
        #expect(meanAbsoluteDifference(decoded.pixels, reference) < 4)
    }

    @Test func grayPixelsAreWrittenAsMonochrome() throws {
        let gray = PixelBuffer(width: 32, height: 16, layout: .gray8, bytes: (0..<512).map { UInt8($0 % 256) })
        let data = try coder.encode(Image(pixels: gray), as: .avif, options: ImageEncodeOptions(lossless: true))
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.pixels.layout == .gray8 && decoded.pixels.bytes == gray.bytes)
    }

    @Test func premultipliedInputIsWrittenStraight() throws {
        let straight = rgbaImage(width: 16, height: 16, alpha: true).pixels
        var premultiplied = Array(straight.bytes)
        for i in stride(from: 0, to: premultiplied.count, by: 4) {
            let alpha = Int(premultiplied[i + 3])
            for c in 0..<3 { premultiplied[i + c] = UInt8((Int(premultiplied[i + c]) * alpha + 127) / 255) }
        }
        let image = Image(
            pixels: PixelBuffer(width: 16, height: 16, layout: .rgba8, alphaMode: .premultiplied, bytes: premultiplied))
        let decoded = try coder.decode(
            try coder.encode(image, as: .avif, options: ImageEncodeOptions(lossless: true)), options: .init())
        #expect(decoded.pixels.alphaMode == .straight)
        #expect(decoded.pixels.bytes == image.pixels.straightRGBABytes())
    }

    @Test func animationRoundTripKeepsFramesAndDurations() throws {
        let image = rgbaImage(width: 24, height: 16, alpha: true, frames: 4, duration: 0.2)
        let data = try coder.encode(image, as: .avif, options: ImageEncodeOptions(effort: .fast, lossless: true))
        #expect(coder.probe(data)?.frameCount == 4)
        let decoded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 4 && decoded.frames.count == 4 && decoded.loopCount == 0)
        for index in 0..<4 {
            #expect(decoded.frames[index].pixels.bytes == image.frames[index].pixels.bytes)
            #expect(abs(decoded.frames[index].duration - 0.2) < 0.001)
        }
        let first = try coder.encode(
            image, as: .avif, options: ImageEncodeOptions(lossless: true, firstFrameOnly: true))
        #expect(try coder.decode(first, options: .init()).frameCount == 1)
    }

    @Test func rawOrientationIsWrittenAsRotationAndMirror() throws {
        let pixels = rgbaImage(width: 20, height: 10, alpha: false).pixels
        let stored = Image(pixels: pixels, metadata: ImageMetadata(orientation: .right))
        let data = try coder.encode(stored, as: .avif, options: ImageEncodeOptions(lossless: true))
        let shown = try coder.decode(data, options: .init())
        #expect(shown.width == 10 && shown.height == 20)
        let raw = try coder.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.metadata.orientation == .right && raw.width == 20)
    }

    @Test func maxPixelSizeAndMaxFileSizeAreHonoured() throws {
        let image = rgbaImage(width: 200, height: 100, alpha: false)
        let small = try coder.encode(
            image, as: .avif, options: ImageEncodeOptions(effort: .fast, maxPixelSize: PixelSize(width: 50, height: 50))
        )
        let decoded = try coder.decode(small, options: .init())
        #expect(decoded.width == 50 && decoded.height == 25)
        let unlimited = try coder.encode(image, as: .avif, options: ImageEncodeOptions(quality: 1, effort: .fast))
        let limited = try coder.encode(
            image, as: .avif, options: ImageEncodeOptions(quality: 1, effort: .fast, maxFileSize: unlimited.count / 2))
        #expect(limited.count < unlimited.count)
    }

    @Test func encodingToAnotherFormatIsRefused() {
        let error = #expect(throws: ImageError.self) {
            try coder.encode(rgbaImage(width: 2, height: 2, alpha: false), as: .png, options: .init())
        }
        #expect(error?.code == .noCoder)
    }
}
