import AVIFCoder
import Foundation
import GIFCoder
import ImageCore
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Issue 25 item 6 on the real coders: every coder's thumbnail path honours `allowsThumbnailUpscaling`
/// (SDWebImage's `shouldScaleUp`) — whole decodes, incremental decodes and animations — and counts the upscaled
/// size against the pixel budget. Driven through `CodersManager`, as the manager decodes.
@Suite struct ThumbnailScaleUpCoderTests {
    static let formats: [ImageFormat] = [.png, .jpeg, .webp, .gif, .avif]
    static let registry = CodersManager(coders: [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared,
    ])

    /// 12x6, opaque: red on the left half, blue on the right.
    static func halves(_ left: [UInt8] = [255, 0, 0], _ right: [UInt8] = [0, 0, 255]) -> PixelBuffer {
        var bytes: [UInt8] = []
        for _ in 0..<6 {
            for x in 0..<12 { bytes += (x < 6 ? left : right) + [255] }
        }
        return PixelBuffer(width: 12, height: 6, layout: .rgba8, alphaMode: .straight, bytes: bytes)
    }

    static func encoded(_ format: ImageFormat, frames: [PixelBuffer] = [halves()]) throws -> Data {
        let image = Image(frames: frames.map { ImageFrame(pixels: $0, duration: 0.1) })
        // Lossless where the format has it, so the colour checks below only see the resampling.
        let options = ImageEncodeOptions(quality: 0.95, lossless: format == .webp || format == .avif)
        return try registry.encode(image, as: format, options: options)
    }

    static func options(box: Int = 48, fit: Bool = true, up: Bool) -> ImageDecodeOptions {
        ImageDecodeOptions(
            thumbnailPixelSize: PixelSize(width: box, height: box), preserveAspectRatio: fit,
            allowsThumbnailUpscaling: up)
    }

    /// Red-ish on the left, blue-ish on the right (lossy codecs and chroma subsampling blur the middle).
    static func expectHalves(
        _ pixels: PixelBuffer, _ format: ImageFormat, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let left = Array(pixels.pixel(x: pixels.width / 8, y: pixels.height / 2))
        let right = Array(pixels.pixel(x: pixels.width - 1 - pixels.width / 8, y: pixels.height / 2))
        #expect(left.count >= 3 && right.count >= 3, "\(format): colour layout", sourceLocation: sourceLocation)
        guard left.count >= 3, right.count >= 3 else { return }
        #expect(left[0] > 180 && left[2] < 80, "\(format): left \(left)", sourceLocation: sourceLocation)
        #expect(right[2] > 180 && right[0] < 80, "\(format): right \(right)", sourceLocation: sourceLocation)
    }

    @Test(
        "SDImageCoderHelper shouldScaleUp on every coder: off by default (never larger than the source); fit and fill reach the box when on",
        arguments: formats)
    func wholeDecodesScaleUpOnlyWhenAsked(format: ImageFormat) throws {
        let data = try Self.encoded(format)
        let plain = try Self.registry.decode(data, options: Self.options(up: false))
        #expect(plain.width == 12 && plain.height == 6, "\(format)")

        let fit = try Self.registry.decode(data, options: Self.options(up: true))
        #expect(fit.width == 48 && fit.height == 24, "\(format)")
        #expect(fit.metadata.sourcePixelWidth == 12 && fit.metadata.sourcePixelHeight == 6, "\(format)")
        Self.expectHalves(fit.pixels, format)

        let fill = try Self.registry.decode(data, options: Self.options(fit: false, up: true))
        #expect(fill.width == 48 && fill.height == 48, "\(format)")
        Self.expectHalves(fill.pixels, format)

        // A box smaller than the source still shrinks, whatever the flag.
        let smaller = try Self.registry.decode(data, options: Self.options(box: 6, up: true))
        #expect(smaller.width == 6 && smaller.height == 3, "\(format)")
    }

    @Test(
        "shouldScaleUp within the pixel budget on every coder: an upscale over maxPixelCount is refused with imageTooLarge",
        arguments: formats)
    func upscalingOverTheBudgetIsRefused(format: ImageFormat) throws {
        let data = try Self.encoded(format)
        var options = Self.options(up: true)
        options.maxPixelCount = 1000  // the 12x6 source fits; its 48x24 thumbnail (1152 px) does not
        let error = #expect(throws: ImageError.self) { try Self.registry.decode(data, options: options) }
        #expect(error?.code == .imageTooLarge, "\(format)")
        // The coder itself refuses too, not only the registry's header check.
        let coder = try #require(Self.registry.coders.first { $0.canDecode(data) })
        let direct = #expect(throws: ImageError.self) { try coder.decode(data, options: options) }
        #expect(direct?.code == .imageTooLarge, "\(format)")
        options.allowsThumbnailUpscaling = false
        #expect(try Self.registry.decode(data, options: options).width == 12)
    }

    @Test(
        "shouldScaleUp on every incremental decoder: the final image, and any preview, has the upscaled size",
        arguments: formats)
    func incrementalDecodesScaleUp(format: ImageFormat) throws {
        let data = try Self.encoded(format)
        let decoder = Self.registry.makeIncrementalDecoder(options: Self.options(up: true))
        decoder.update(data.prefix(data.count * 3 / 4), isFinal: false)
        if let preview = try decoder.currentImage() {
            #expect(preview.width == 48 && preview.height == 24, "\(format) preview")
        }
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(final.width == 48 && final.height == 24 && !final.metadata.isPartial, "\(format)")
        Self.expectHalves(final.pixels, format)
    }

    @Test(
        "shouldScaleUp on animations (GIF, WebP): every frame, held or decoded on demand, has the upscaled size",
        arguments: [ImageFormat.gif, .webp])
    func animationsScaleUpEveryFrame(format: ImageFormat) throws {
        let data = try Self.encoded(
            format, frames: [Self.halves(), Self.halves([0, 0, 255], [255, 0, 0])])
        var options = Self.options(up: true)
        options.preloadAllFrames = true
        let preloaded = try Self.registry.decode(data, options: options)
        #expect(preloaded.frameCount == 2 && preloaded.frames.count == 2, "\(format)")
        for frame in preloaded.frames {
            #expect(frame.pixels.width == 48 && frame.pixels.height == 24, "\(format)")
        }
        Self.expectHalves(preloaded.frames[0].pixels, format)
        // Swapped colours in the second frame.
        let second = preloaded.frames[1].pixels
        #expect(Array(second.pixel(x: 4, y: 12))[2] > 180 && Array(second.pixel(x: 43, y: 12))[0] > 180, "\(format)")

        options.preloadAllFrames = false
        let onDemand = try Self.registry.decode(data, options: options)
        let later = try onDemand.frame(at: 1)
        #expect(later.pixels.width == 48 && later.pixels.height == 24, "\(format)")
        let provider = try #require(
            Self.registry.coders.compactMap { $0 as? any AnimatedImageCoder }.first {
                $0.canDecode(data)
            })
        #expect(
            try provider.makeAnimatedProvider(for: data, options: options).canvasSize
                == PixelSize(width: 48, height: 24))
    }
}
