import Foundation
import ImageCore
import Testing
import WebPCoder

/// An RGBA image from raw frames (straight alpha).
func makeRGBAImage(width: Int, height: Int, frames: [[UInt8]], durations: [Double]? = nil, loopCount: Int = 0) -> Image
{
    let list = frames.enumerated().map { index, bytes in
        ImageFrame(
            pixels: PixelBuffer(width: width, height: height, layout: .rgba8, alphaMode: .straight, bytes: bytes),
            duration: durations?[index] ?? 0)
    }
    return Image(frames: list, loopCount: loopCount)
}

/// A smooth photo-like RGBA pattern; `transparentEvery` > 0 makes every n-th pixel transparent (keeping colour).
func webpPattern(width: Int, height: Int, seed: Int = 0, transparentEvery: Int = 0) -> [UInt8] {
    var rgba: [UInt8] = []
    for y in 0..<height {
        for x in 0..<width {
            let i = y * width + x
            let alpha: UInt8 = transparentEvery > 0 && (i + seed) % transparentEvery == 0 ? 0 : 255
            rgba += [
                UInt8((x * 255) / max(width - 1, 1)), UInt8((y * 255) / max(height - 1, 1)),
                UInt8((x + y + seed * 40) % 256), alpha,
            ]
        }
    }
    return rgba
}

/// Peak signal-to-noise ratio over RGB.
func psnr(_ a: [UInt8], _ aChannels: Int, _ b: [UInt8], _ bChannels: Int, pixels: Int) -> Double {
    var squared = 0.0
    for i in 0..<pixels {
        for c in 0..<3 {
            let d = Double(a[i * aChannels + c]) - Double(b[i * bChannels + c])
            squared += d * d
        }
    }
    let mse = squared / Double(pixels * 3)
    return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
}

@Suite struct WebPCoderTests {
    let coder = WebPCoder.shared

    @Test func losslessRoundTripIsExactIncludingColourUnderTransparency() throws {
        let rgba = webpPattern(width: 33, height: 17, transparentEvery: 5)
        let data = try coder.encode(
            makeRGBAImage(width: 33, height: 17, frames: [rgba]), as: .webp, options: ImageEncodeOptions(lossless: true)
        )
        #expect(ImageFormat.detect(data) == .webp)
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.width == 33 && decoded.height == 17 && decoded.format == .webp && decoded.frameCount == 1)
        #expect(decoded.pixels.layout == .rgba8 && decoded.pixels.alphaMode == .straight)
        #expect(decoded.pixels.bytes == rgba)
    }

    @Test func opaqueLosslessDecodesToRGB() throws {
        let rgba = webpPattern(width: 20, height: 10)
        let data = try coder.encode(
            makeRGBAImage(width: 20, height: 10, frames: [rgba]), as: .webp,
            options: ImageEncodeOptions(effort: .fast, lossless: true))
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.pixels.layout == .rgb8)
        let rgb = stride(from: 0, to: rgba.count, by: 4).flatMap { rgba[$0..<$0 + 3] }
        #expect(decoded.pixels.bytes == rgb)
    }

    /// Lossy at quality 0.85 keeps this smooth 96x64 pattern above 30 dB PSNR.
    @Test func lossyRoundTripIsAbove30dB() throws {
        let rgba = webpPattern(width: 96, height: 64)
        for effort in [EncodeEffort.fast, .balanced, .best] {
            let data = try coder.encode(
                makeRGBAImage(width: 96, height: 64, frames: [rgba]), as: .webp,
                options: ImageEncodeOptions(effort: effort))
            let decoded = try coder.decode(data, options: .init())
            let value = psnr(rgba, 4, Array(decoded.pixels.bytes), decoded.pixels.layout.bytesPerPixel, pixels: 96 * 64)
            #expect(value > 30, "PSNR \(value) dB at effort \(effort)")
        }
    }

    @Test(arguments: [0, 3])
    func animatedRoundTripKeepsFramesDurationsAndLoopCount(loopCount: Int) throws {
        let frames = (0..<3).map { webpPattern(width: 12, height: 8, seed: $0 + 1) }
        let image = makeRGBAImage(
            width: 12, height: 8, frames: frames, durations: [0.1, 0.25, 0.5], loopCount: loopCount)
        let data = try coder.encode(image, as: .webp, options: ImageEncodeOptions(lossless: true))
        let decoded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 3 && decoded.loopCount == loopCount)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.25, 0.5])
        for index in 0..<3 { #expect(decoded.frames[index].pixels.bytes == frames[index], "frame \(index)") }
        let lossy = try coder.decode(try coder.encode(image, as: .webp, options: .init()), options: .init())
        #expect(lossy.frameCount == 3 && lossy.width == 12)
        let first = try coder.encode(
            image, as: .webp, options: ImageEncodeOptions(lossless: true, firstFrameOnly: true))
        let still = try coder.decode(first, options: .init())
        let rgb = stride(from: 0, to: frames[0].count, by: 4).flatMap { frames[0][$0..<$0 + 3] }
        #expect(still.frameCount == 1 && still.pixels.layout == .rgb8 && still.pixels.bytes == rgb)
    }

    /// Lossless still of `width` x `height` filled with one RGBA colour, as container image chunks.
    func solid(_ color: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let rgba = Array([[UInt8]](repeating: color, count: width * height).joined())
        let file = try coder.encode(
            makeRGBAImage(width: width, height: height, frames: [rgba]), as: .webp,
            options: ImageEncodeOptions(lossless: true))
        return WebPBuilder.imageChunks(of: [UInt8](file))
    }

    @Test func blendAndDisposeAreComposited() throws {
        let red: [UInt8] = [255, 0, 0, 255]
        let halfBlue: [UInt8] = [0, 0, 255, 128]
        let green: [UInt8] = [0, 255, 0, 255]
        let bytes = WebPBuilder.riff([
            WebPBuilder.vp8x(flags: 0x12, width: 4, height: 4),
            WebPBuilder.anim(loopCount: 2),
            WebPBuilder.anmf(
                x: 0, y: 0, width: 4, height: 4, durationMs: 100, blend: false, dispose: false,
                frameData: try solid(red, width: 4, height: 4)),
            // Alpha-blended over red, then disposed to transparent.
            WebPBuilder.anmf(
                x: 2, y: 2, width: 2, height: 2, durationMs: 200, blend: true, dispose: true,
                frameData: try solid(halfBlue, width: 2, height: 2)),
            // Not blended: replaces the pixels, alpha included.
            WebPBuilder.anmf(
                x: 0, y: 0, width: 2, height: 2, durationMs: 5, blend: false, dispose: false,
                frameData: try solid(halfBlue, width: 2, height: 2)),
            WebPBuilder.anmf(
                x: 0, y: 2, width: 1, height: 1, durationMs: 300, blend: true, dispose: false,
                frameData: try solid(green, width: 1, height: 1)),
        ])
        let image = try coder.decode(Data(bytes), options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(image.frameCount == 4 && image.loopCount == 2 && image.width == 4)
        #expect(image.frames.map(\.duration) == [0.1, 0.2, 0.1, 0.3], "5 ms is clamped to 100 ms")
        func at(_ frame: Int, _ x: Int, _ y: Int) -> [UInt8] { Array(image.frames[frame].pixels.pixel(x: x, y: y)) }
        #expect(at(0, 3, 3) == red)
        let blended = at(1, 3, 3)
        #expect(blended[3] == 255 && blended[0] > 100 && blended[0] < 150 && blended[2] > 100, "\(blended)")
        #expect(at(1, 0, 0) == red)
        #expect(at(2, 3, 3) == [0, 0, 0, 0], "frame 1 was disposed to transparent")
        #expect(at(2, 0, 0) == halfBlue, "no blending keeps the frame's own alpha")
        #expect(at(2, 1, 2) == red)
        #expect(at(3, 0, 2) == green && at(3, 1, 1) == halfBlue && at(3, 2, 2) == [0, 0, 0, 0])
        let lazy = try coder.decode(Data(bytes), options: .init())
        for index in [3, 0, 2, 1] { #expect(try lazy.frame(at: index) == image.frames[index], "frame \(index)") }
    }

    @Test func iccProfileIsReadFromTheContainer() throws {
        let profile: [UInt8] = Array((0..<131).map { UInt8($0 % 251) })
        let bytes = WebPBuilder.riff([
            WebPBuilder.vp8x(flags: 0x20, width: 3, height: 2),
            WebPBuilder.chunk("ICCP", profile),
            try solid([9, 8, 7, 255], width: 3, height: 2),
        ])
        let image = try coder.decode(Data(bytes), options: .init())
        #expect(image.metadata.iccProfile == profile)
        #expect(image.width == 3 && Array(image.pixels.pixel(x: 2, y: 1)) == [9, 8, 7])
        // The encoder writes the profile back (ICCP): pixels that are not sRGB keep their meaning.
        let reencoded = try coder.decode(
            try coder.encode(image, as: .webp, options: ImageEncodeOptions(lossless: true)), options: .init())
        #expect(reencoded.metadata.iccProfile == profile)
        #expect(Array(reencoded.pixels.pixel(x: 2, y: 1)) == [9, 8, 7])
        // Pixels without a profile (sRGB) are written without one.
        let plain = try coder.decode(
            try coder.encode(
                image.with(metadata: ImageMetadata()), as: .webp, options: ImageEncodeOptions(lossless: true)),
            options: .init())
        #expect(plain.metadata.iccProfile == nil)
    }
}

/// The encoder imports RGB and straight RGBA from the image's own storage and converts the rest: every layout, alpha
/// mode and row padding encodes losslessly to exactly the pixels its straight RGBA says, as a still and as frames of
/// an animation.
@Suite struct WebPEncoderInputTests {
    static let layouts: [(PixelLayout, AlphaMode)] = [
        (.rgb8, .none), (.rgba8, .straight), (.rgba8, .premultiplied), (.gray8, .none), (.grayAlpha8, .straight),
    ]

    static func buffer(_ layout: PixelLayout, _ alphaMode: AlphaMode, padding: Int, seed: Int) -> PixelBuffer {
        let (width, height) = (19, 11)
        let bytesPerRow = width * layout.bytesPerPixel + padding
        var state = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 &+ 1)
        var bytes = (0..<(bytesPerRow * height)).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        if alphaMode == .premultiplied {  // colour never above alpha, as premultiplied pixels are
            for y in 0..<height {
                for x in 0..<width {
                    let p = y * bytesPerRow + x * 4
                    for c in 0..<3 { bytes[p + c] = min(bytes[p + c], bytes[p + 3]) }
                }
            }
        }
        return PixelBuffer(
            width: width, height: height, layout: layout, alphaMode: alphaMode, bytesPerRow: bytesPerRow, bytes: bytes)
    }

    @Test(arguments: 0..<layouts.count, [0, 5])
    func everyLayoutEncodesToItsStraightRGBA(layout index: Int, padding: Int) throws {
        let (layout, alphaMode) = Self.layouts[index]
        let first = Self.buffer(layout, alphaMode, padding: padding, seed: index)
        let second = Self.buffer(layout, alphaMode, padding: padding, seed: index + 100)
        let options = ImageEncodeOptions(effort: .fast, lossless: true)
        let still = try WebPCoder.shared.encode(
            Image(frames: [ImageFrame(pixels: first, duration: 0)], loopCount: 0), as: .webp, options: options)
        let decoded = try WebPCoder.shared.decode(still, options: .init())
        #expect(decoded.pixels.straightRGBABytes() == first.straightRGBABytes(), "\(layout) \(alphaMode) +\(padding)")
        let animation = try WebPCoder.shared.encode(
            Image(
                frames: [ImageFrame(pixels: first, duration: 0.1), ImageFrame(pixels: second, duration: 0.1)],
                loopCount: 0),
            as: .webp, options: options)
        let frames = try WebPCoder.shared.decode(animation, options: .init())
        #expect(frames.frameCount == 2)
        #expect(try frames.frame(at: 1).pixels.straightRGBABytes() == second.straightRGBABytes())
    }
}
