import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Encoding stills and animations, lossless and lossy, read back through the decoder.
@Suite struct JXLEncodeTests {
    static func pixels(_ layout: PixelLayout, width: Int = 40, height: Int = 24, shift: Int = 0) -> PixelBuffer {
        var bytes: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let values = [x * 6 + shift, y * 10, (x + y) * 3 + shift, 128 + x - y]
                switch layout {
                case .gray8: bytes.append(UInt8(truncatingIfNeeded: values[0]))
                case .grayAlpha8: bytes += [UInt8(truncatingIfNeeded: values[0]), UInt8(truncatingIfNeeded: values[3])]
                case .rgb8: bytes += values.prefix(3).map { UInt8(truncatingIfNeeded: $0) }
                case .rgba8: bytes += values.map { UInt8(truncatingIfNeeded: $0) }
                }
            }
        }
        return PixelBuffer(width: width, height: height, layout: layout, alphaMode: .straight, bytes: bytes)
    }

    @Test(arguments: [PixelLayout.gray8, .grayAlpha8, .rgb8, .rgba8], [EncodeEffort.fast, .balanced])
    func losslessRoundTripsExactly(layout: PixelLayout, effort: EncodeEffort) throws {
        let image = Image(pixels: Self.pixels(layout))
        let data = try JXLCoder.shared.encode(
            image, as: .jxl, options: ImageEncodeOptions(effort: effort, lossless: true))
        #expect(ImageFormat.detect(data) == .jxl)
        let decoded = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.pixels == image.pixels)
    }

    @Test func lossyQualityTradesSizeForError() throws {
        let image = Image(pixels: Self.pixels(.rgb8, width: 96, height: 64))
        func encode(_ quality: Double) throws -> (size: Int, error: Double) {
            let data = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(quality: quality))
            let decoded = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
            let total = zip(decoded.pixels.bytes, image.pixels.bytes).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
            return (data.count, Double(total) / Double(image.pixels.bytes.count))
        }
        let high = try encode(0.95)
        let low = try encode(0.3)
        #expect(high.error < 3, "quality 95: mean error \(high.error)")
        #expect(low.size < high.size)
        #expect(low.error > high.error)
    }

    @Test func maxFileSizeLowersTheQualityUntilItFits() throws {
        let image = Image(pixels: Self.pixels(.rgb8, width: 128, height: 96))
        let full = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(quality: 0.95))
        let limit = full.count * 2 / 3
        let fitted = try JXLCoder.shared.encode(
            image, as: .jxl, options: ImageEncodeOptions(quality: 0.95, maxFileSize: limit))
        #expect(fitted.count <= limit, "\(fitted.count) bytes for a limit of \(limit)")
    }

    @Test func animationsRoundTripWithTheirTiming() throws {
        let frames = (0..<4).map {
            ImageFrame(pixels: Self.pixels(.rgba8, shift: $0 * 40), duration: [0.05, 0.25, 1.5, 0.02][$0])
        }
        let image = Image(frames: frames, loopCount: 5)
        let data = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(lossless: true))
        let decoded = try JXLCoder.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 4)
        #expect(decoded.loopCount == 5)
        #expect(decoded.frames.map(\.duration) == [0.05, 0.25, 1.5, 0.02])
        #expect(decoded.frames.map(\.pixels) == frames.map(\.pixels))
        let first = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(firstFrameOnly: true))
        #expect(try JXLCoder.shared.decode(first, options: ImageDecodeOptions()).frameCount == 1)
        #expect(JXLCoder.shared.probe(first)?.frameCount == 1)
        #expect(JXLCoder.shared.probe(data)?.frameCount == nil, "an animation's count needs the frame walk")
    }

    /// In JPEG XL a frame of duration 0 is a layer of the next frame; the encoder gives every frame at least one
    /// tick so an animation keeps its frames.
    @Test func zeroDurationFramesStayFrames() throws {
        let frames = (0..<3).map { ImageFrame(pixels: Self.pixels(.gray8, shift: $0 * 30), duration: 0) }
        let data = try JXLCoder.shared.encode(
            Image(frames: frames), as: .jxl, options: ImageEncodeOptions(lossless: true))
        let decoded = try JXLCoder.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 3)
        #expect(decoded.frames.map(\.pixels) == frames.map(\.pixels))
    }

    @Test func keptOrientationIsWrittenIntoTheCodestream() throws {
        let stored = Self.pixels(.rgb8)
        let image = Image(
            pixels: stored, metadata: ImageMetadata(orientation: .right, sourceOrientation: .right))
        let data = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(lossless: true))
        let shown = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(shown.pixels == stored.oriented(.right))
        let raw = try JXLCoder.shared.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.metadata.orientation == .right && raw.pixels == stored)
    }

    @Test func premultipliedPixelsAreWrittenStraight() throws {
        let straight = Self.pixels(.rgba8)
        var bytes = Array(straight.bytes)
        for i in stride(from: 0, to: bytes.count, by: 4) {
            for c in 0..<3 { bytes[i + c] = UInt8((Int(bytes[i + c]) * Int(bytes[i + 3]) + 127) / 255) }
        }
        let pixels = PixelBuffer(width: 40, height: 24, layout: .rgba8, alphaMode: .premultiplied, bytes: bytes)
        let data = try JXLCoder.shared.encode(
            Image(pixels: pixels), as: .jxl, options: ImageEncodeOptions(lossless: true))
        let decoded = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.pixels.alphaMode == .straight)
        #expect(decoded.pixels.bytes == pixels.straightRGBABytes(), "exactly what straightening gives")
    }

    @Test func maxPixelSizeAndOtherFormats() throws {
        let image = Image(pixels: Self.pixels(.rgb8, width: 80, height: 40))
        let data = try JXLCoder.shared.encode(
            image, as: .jxl, options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 20, height: 20)))
        #expect(JXLCoder.shared.probe(data).map { ($0.width, $0.height) } ?? (0, 0) == (20, 10))
        #expect {
            _ = try JXLCoder.shared.encode(image, as: .png, options: ImageEncodeOptions())
        } throws: { ($0 as? ImageError)?.code == .noCoder }
    }

    @Test func framesOverTheEncodeBudgetAreRefused() throws {
        var budget = AnimationBudget()
        budget.maxFrameCount = 2
        let frames = (0..<3).map { ImageFrame(pixels: Self.pixels(.gray8, shift: $0), duration: 0.1) }
        #expect {
            _ = try JXLCoder.shared.encode(
                Image(frames: frames, animationBudget: budget), as: .jxl, options: ImageEncodeOptions())
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
    }
}
