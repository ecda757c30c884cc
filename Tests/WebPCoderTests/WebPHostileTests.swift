import Foundation
import ImageCore
import Testing
import WebPCoder

/// Durations, frame sizes and frame counts at the edges (issue 13 items 1 and 2). Each case trapped or read out
/// of bounds before the fix; now it encodes, or fails with a clean `ImageError`.
@Suite struct WebPHostileTests {
    let coder = WebPCoder.shared

    static func frames(_ count: Int, width: Int = 2, height: Int = 2, duration: Double) -> Image {
        makeRGBAImage(
            width: width, height: height,
            frames: (0..<count).map { webpPattern(width: width, height: height, seed: $0) },
            durations: Array(repeating: duration, count: count))
    }

    /// 135 frames of 16,000 s (within ANMF's 24-bit durations) last longer than WebP's 32-bit millisecond
    /// timestamps: `Int32(timestamp)` trapped on main; a day-long frame is clamped to ANMF's 4.66 hours.
    @Test func animationLongerThanInt32MillisecondsIsAnEncodeError() throws {
        for (count, duration) in [(135, 16_000.0), (130, 86_400.0)] {
            let error = #expect(throws: ImageError.self) {
                try coder.encode(Self.frames(count, duration: duration), as: .webp, options: .init())
            }
            #expect(error?.code == .encodeFailed)
        }
        let image = Self.frames(130, duration: 86_400)
        let error = #expect(throws: ImageError.self) { try coder.encode(image, as: .webp, options: .init()) }
        #expect(error?.code == .encodeFailed)
        // Within the limit (and within ANMF's 24-bit durations): encodes, and each frame keeps its duration.
        let fits = try coder.encode(Self.frames(20, duration: 100), as: .webp, options: .init())
        let decoded = try coder.decode(fits, options: .init(preloadAllFrames: true))
        #expect(decoded.frameCount == 20 && decoded.frames[19].duration == 100)
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 1e300, -5])
    func hostileDurationsEncode(duration: Double) throws {
        let image = Self.frames(3, duration: duration)
        #expect(image.frames.allSatisfy { $0.duration.isFinite && $0.duration >= 0 })
        let data = try coder.encode(image, as: .webp, options: .init())
        let decoded = try coder.decode(data, options: .init(preloadAllFrames: true))
        #expect(decoded.frameCount == 3)
        #expect(decoded.frames.allSatisfy { $0.duration <= 16_777.215 })
    }

    /// A frame smaller than the canvas used to be imported with the canvas size (a heap over-read).
    @Test func framesOfAnotherSizeThanTheCanvasAreScaledNotOverread() throws {
        let big = ImageFrame(
            pixels: PixelBuffer(
                width: 8, height: 8, layout: .rgba8, alphaMode: .straight, bytes: webpPattern(width: 8, height: 8)),
            duration: 0.1)
        let small = ImageFrame(
            pixels: PixelBuffer(width: 2, height: 2, layout: .rgb8, bytes: [UInt8](repeating: 200, count: 12)),
            duration: 0.1)
        let data = try coder.encode(Image(frames: [big, small]), as: .webp, options: .init(lossless: true))
        let decoded = try coder.decode(data, options: .init(preloadAllFrames: true))
        #expect(decoded.width == 8 && decoded.height == 8 && decoded.frameCount == 2)
    }

    @Test func oversizedImagesAreEncodeErrorsNotTraps() throws {
        let wide = Image(pixels: PixelBuffer(width: 20_000, height: 1, layout: .gray8))
        let error = #expect(throws: ImageError.self) { try coder.encode(wide, as: .webp, options: .init()) }
        #expect(error?.code == .encodeFailed)
        let empty = Image(pixels: PixelBuffer(width: 0, height: 0, layout: .rgba8))
        #expect(throws: ImageError.self) { try coder.encode(empty, as: .webp, options: .init()) }
        // NaN quality is the default quality, not a trap in the file-size search.
        var options = ImageEncodeOptions(quality: .nan)
        options.maxFileSize = 10
        _ = try coder.encode(Self.frames(1, width: 16, height: 16, duration: 0), as: .webp, options: options)
    }

    @Test func frameLimitAndFramesTimesCanvasAreEnforced() throws {
        let data = try coder.encode(Self.frames(12, width: 16, height: 16, duration: 0.05), as: .webp, options: .init())
        var options = ImageDecodeOptions()
        options.maxFrameCount = 10
        for preload in [false, true] {
            options.preloadAllFrames = preload
            let error = #expect(throws: ImageError.self) { try coder.decode(data, options: options) }
            #expect(error?.code == .imageTooLarge)
        }
        #expect(throws: ImageError.self) { try coder.makeAnimatedProvider(for: data, options: options) }
        options.animationBudget.onExceeded = .firstFrameOnly
        #expect(try coder.decode(data, options: options).frameCount == 1)

        // 12 frames x 256 pixels against a budget of 2,000 pixels: preloading is refused, on demand is fine.
        var pixels = ImageDecodeOptions(preloadAllFrames: true)
        pixels.maxAnimationPixelCount = 2_000
        #expect(throws: ImageError.self) { try coder.decode(data, options: pixels) }
        pixels.preloadAllFrames = false
        let image = try coder.decode(data, options: pixels)
        #expect(image.frameCount == 12 && image.frames.count == 1)
        // Whole-animation work on it (an encode of every frame) is refused before any frame is decoded.
        let encode = #expect(throws: ImageError.self) { try coder.encode(image, as: .webp, options: .init()) }
        #expect(encode?.code == .imageTooLarge)
    }

    @Test func workBudgetStopsTheOnDemandProvider() throws {
        let data = try coder.encode(Self.frames(12, width: 16, height: 16, duration: 0.05), as: .webp, options: .init())
        var options = ImageDecodeOptions()
        options.maxAnimationWorkPixelCount = 5 * 256  // five canvases per pass
        let provider = try coder.makeAnimatedProvider(for: data, options: options)
        _ = try provider.frame(at: 4)
        let error = #expect(throws: ImageError.self) { try provider.frame(at: 5) }
        #expect(error?.code == .imageTooLarge)
        // A new pass (back to frame 0) starts a new budget.
        _ = try provider.frame(at: 0)
    }
}
