import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Animations: frames on demand in any order, the first frame alone, and every budget checked before any pixel.
@Suite struct JXLAnimationTests {
    static func animation(frames count: Int, width: Int = 16, height: Int = 12) throws -> (Data, [PixelBuffer]) {
        let frames = (0..<count).map { index in
            let bytes = (0..<width * height * 3).map { UInt8(truncatingIfNeeded: $0 * 3 + index * 37) }
            return PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes)
        }
        let image = Image(frames: frames.map { ImageFrame(pixels: $0, duration: 0.1) })
        let data = try JXLCoder.shared.encode(
            image, as: .jxl, options: ImageEncodeOptions(effort: .fast, lossless: true))
        return (data, frames)
    }

    @Test func framesDecodeOnDemandInAnyOrder() throws {
        let (data, frames) = try Self.animation(frames: 6)
        let image = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.frames.count == 1 && image.frameCount == 6)
        #expect(image.animatedProvider != nil)
        for index in [5, 2, 3, 0, 4, 1, 1] {
            #expect(try image.frame(at: index).pixels == frames[index], "frame \(index)")
        }
        #expect(throws: ImageError.self) { try image.frame(at: 6) }
        let provider = try JXLCoder.shared.makeAnimatedProvider(for: data, options: ImageDecodeOptions())
        #expect(provider.frameCount == 6 && provider.loopCount == 0)
        #expect(try provider.frame(at: 3).pixels == frames[3])
        #expect(image.memoryCost > image.pixels.byteCount, "the provider's state is counted")
    }

    @Test func firstFrameOnlyDecodesOneFrame() throws {
        let (data, frames) = try Self.animation(frames: 3)
        let image = try JXLCoder.shared.decode(data, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(image.frameCount == 1)
        #expect(image.pixels == frames[0])
        #expect(image.frames[0].duration == 0)
    }

    @Test func aStillIsAOneFrameAnimation() throws {
        let still = try JXLCoder.shared.encode(
            Image(pixels: PixelBuffer(width: 3, height: 3, layout: .gray8)), as: .jxl, options: ImageEncodeOptions())
        let provider = try JXLCoder.shared.makeAnimatedProvider(for: still, options: ImageDecodeOptions())
        #expect(provider.frameCount == 1)
        #expect(try provider.frame(at: 0).pixels.width == 3)
    }

    @Test func aFrameCountOverTheBudgetIsRefusedBeforeDecoding() throws {
        let (data, frames) = try Self.animation(frames: 5)
        var options = ImageDecodeOptions()
        options.maxFrameCount = 4
        #expect {
            _ = try JXLCoder.shared.decode(data, options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        #expect {
            _ = try JXLCoder.shared.makeAnimatedProvider(for: data, options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        options.animationBudget.onExceeded = .firstFrameOnly
        let first = try JXLCoder.shared.decode(data, options: options)
        #expect(first.frameCount == 1 && first.pixels == frames[0])
    }

    @Test func preloadingMoreThanTheAnimationPixelBudgetIsRefused() throws {
        let (data, _) = try Self.animation(frames: 4)
        var options = ImageDecodeOptions(preloadAllFrames: true)
        options.maxAnimationPixelCount = 4 * 16 * 12 - 1
        #expect {
            _ = try JXLCoder.shared.decode(data, options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        options.preloadAllFrames = false
        #expect(try JXLCoder.shared.decode(data, options: options).frameCount == 4)
    }

    @Test func theWorkBudgetCountsDecodedAndSkippedFrames() throws {
        let (data, _) = try Self.animation(frames: 5)
        var options = ImageDecodeOptions()
        options.maxAnimationWorkPixelCount = 3 * 16 * 12
        let image = try JXLCoder.shared.decode(data, options: options)
        _ = try image.frame(at: 2)
        #expect {
            _ = try image.frame(at: 4)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        // Starting over (an earlier frame) starts a new pass.
        _ = try image.frame(at: 1)
    }
}
