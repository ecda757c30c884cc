import Dispatch
import Foundation
import ImageCore
import Testing
import WebPCoder

/// Budget, hostile input, incremental decoding, on-demand frames, sizing options and registration.
@Suite struct WebPCoderSafetyTests {
    let coder = WebPCoder.shared

    static func animation(frames: Int = 4, width: Int = 8, height: Int = 6) throws -> (Data, [[UInt8]]) {
        let pixels = (0..<frames).map { webpPattern(width: width, height: height, seed: $0 + 1, transparentEvery: 3) }
        let image = makeRGBAImage(
            width: width, height: height, frames: pixels, durations: Array(repeating: 0.2, count: frames))
        return (try WebPCoder.shared.encode(image, as: .webp, options: ImageEncodeOptions(lossless: true)), pixels)
    }

    static func lossyStill(width: Int = 256, height: Int = 192, quality: Double = 0.9) throws -> Data {
        let image = makeRGBAImage(width: width, height: height, frames: [webpPattern(width: width, height: height)])
        return try WebPCoder.shared.encode(image, as: .webp, options: ImageEncodeOptions(quality: quality))
    }

    @Test func hugeCanvasIsRefusedFromTheHeader() throws {
        // An animated container declaring a 16384 x 16384 canvas (268 M pixels) with no frames at all.
        let bytes = WebPBuilder.riff([
            WebPBuilder.vp8x(flags: 0x02, width: 16384, height: 16384), WebPBuilder.anim(loopCount: 0),
        ])
        #expect(coder.probe(Data(bytes)) == ImageProperties(format: .webp, width: 16384, height: 16384))
        let error = #expect(throws: ImageError.self) { try coder.decode(Data(bytes), options: .init()) }
        #expect(error?.code == .imageTooLarge)
        let viaProvider = #expect(throws: ImageError.self) {
            try coder.makeAnimatedProvider(for: Data(bytes), options: .init())
        }
        #expect(viaProvider?.code == .imageTooLarge)
        let data = try Self.lossyStill(width: 20, height: 10)
        let small = #expect(throws: ImageError.self) {
            try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 199))
        }
        #expect(small?.code == .imageTooLarge)
        #expect(try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 200)).width == 20)
        let incremental = coder.makeIncrementalDecoder(options: ImageDecodeOptions(maxPixelCount: 199))
        incremental.update(data, isFinal: false)
        #expect(throws: ImageError.self) { try incremental.currentImage() }
    }

    @Test func garbageAndTruncatedInputThrowImageErrors() throws {
        for garbage in [
            Data(), Data("RIFF\u{0}\u{0}\u{0}\u{0}WEBP".utf8), Data("RIFF\u{10}\u{0}\u{0}\u{0}WEBPVP8 junkjunk".utf8),
        ] {
            let error = #expect(throws: ImageError.self) { try coder.decode(garbage, options: .init()) }
            #expect(error?.code == .badImageData)
        }
        for data in [try Self.lossyStill(width: 40, height: 30), try Self.animation().0] {
            let bytes = [UInt8](data)
            for length in stride(from: 0, to: bytes.count - 1, by: 5) {
                let error = #expect(throws: ImageError.self, "prefix \(length) of \(bytes.count)") {
                    try coder.decode(Data(bytes[..<length]), options: ImageDecodeOptions(preloadAllFrames: true))
                }
                #expect(error?.code == .badImageData)
            }
        }
    }

    @Test func incrementalDecodingShowsRowsAndEndsEqualToFullDecode() throws {
        let data = try Self.lossyStill()
        let full = try coder.decode(data, options: .init())
        let decoder = coder.makeIncrementalDecoder(options: .init())
        #expect(coder.canIncrementallyDecode(data.prefix(12)))
        var sawNil = false
        var partials = 0
        var lastNonZero = 0
        for length in stride(from: 1, to: data.count, by: max(1, data.count / 40)) {
            decoder.update(data.prefix(length), isFinal: false)
            guard let image = try decoder.currentImage() else {
                sawNil = true
                continue
            }
            partials += 1
            #expect(image.metadata.isPartial && image.width == 256 && image.height == 192)
            let nonZero = image.pixels.bytes.reduce(0) { $0 + ($1 != 0 ? 1 : 0) }
            #expect(nonZero >= lastNonZero, "decoded rows only grow")
            lastNonZero = nonZero
        }
        #expect(sawNil && partials > 1)
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(!final.metadata.isPartial && final.pixels == full.pixels && final.metadata == full.metadata)
    }

    @Test func incrementalAnimationWaitsForAllBytes() throws {
        let (data, _) = try Self.animation()
        let full = try coder.decode(data, options: .init())
        let decoder = coder.makeIncrementalDecoder(options: .init())
        decoder.update(data.prefix(data.count - 3), isFinal: false)
        #expect(try decoder.currentImage() == nil)
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(final.frameCount == full.frameCount)
        for index in 0..<full.frameCount { #expect(try final.frame(at: index) == (try full.frame(at: index))) }
    }

    @Test func onDemandFramesHoldOnlyTheFirstFrame() throws {
        let (data, pixels) = try Self.animation(frames: 5)
        let frameBytes = 8 * 6 * 4
        let lazy = try coder.decode(data, options: .init())
        #expect(lazy.frames.count == 1 && lazy.frameCount == 5 && lazy.animatedProvider != nil)
        // The held frame plus what the provider retains: the encoded bytes and its compositing canvas(es).
        #expect(lazy.memoryCost == frameBytes + (data.count + 2 * frameBytes))
        #expect(lazy.animatedProvider?.retainedByteCount == data.count + 2 * frameBytes)
        let preloaded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(preloaded.frames.count == 5 && preloaded.memoryCost == 5 * frameBytes)
        let first = try coder.decode(data, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1 && first.memoryCost == frameBytes)
        let results = Locked<[Int: [UInt8]]>([:])
        DispatchQueue.concurrentPerform(iterations: 20) { i in
            if let frame = try? lazy.frame(at: (i * 3) % 5) { results.withLock { $0[i] = Array(frame.pixels.bytes) } }
        }
        #expect(results.value.count == 20)
        for (i, bytes) in results.value { #expect(bytes == pixels[(i * 3) % 5]) }
        #expect(throws: ImageError.self) { try lazy.frame(at: 5) }
        let provider = try coder.makeAnimatedProvider(for: data, options: .init())
        #expect(provider.frameCount == 5 && provider.loopCount == 0 && provider.duration(at: 1) == 0.2)
        #expect(provider.canvasSize == PixelSize(width: 8, height: 6))
        #expect(try provider.frame(at: 3).pixels.bytes == pixels[3])
    }

    @Test func thumbnailsUseScaledDecoding() throws {
        let data = try Self.lossyStill(width: 64, height: 32)
        let thumb = try coder.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 16, height: 16)))
        #expect(thumb.width == 16 && thumb.height == 8 && thumb.metadata.sourcePixelWidth == 64)
        let budget = try coder.decode(data, options: ImageDecodeOptions(scaleDownLimitBytes: 32 * 16 * 4))
        #expect(budget.width * budget.height * 4 <= 32 * 16 * 4 && budget.width >= 31)
        let (animation, _) = try Self.animation(frames: 2, width: 40, height: 20)
        let animatedThumb = try coder.decode(
            animation, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 10, height: 10)))
        let secondFrame = try animatedThumb.frame(at: 1)
        #expect(animatedThumb.width == 10 && animatedThumb.height == 5 && secondFrame.pixels.width == 10)
    }

    @Test func maxPixelSizeAndMaxFileSize() throws {
        var noisy: [UInt8] = []
        var state: UInt32 = 12345
        for _ in 0..<(128 * 128) {
            state = state &* 1_664_525 &+ 1_013_904_223
            noisy += [
                UInt8(truncatingIfNeeded: state >> 24), UInt8(truncatingIfNeeded: state >> 16),
                UInt8(truncatingIfNeeded: state >> 8), 255,
            ]
        }
        let image = makeRGBAImage(width: 128, height: 128, frames: [noisy])
        let large = try coder.encode(image, as: .webp, options: ImageEncodeOptions(quality: 0.95))
        let limit = large.count / 3
        let limited = try coder.encode(image, as: .webp, options: ImageEncodeOptions(quality: 0.95, maxFileSize: limit))
        #expect(limited.count <= limit, "\(limited.count) bytes for a limit of \(limit) (unlimited: \(large.count))")
        #expect(try coder.decode(limited, options: .init()).width == 128)
        let resized = try coder.encode(
            image, as: .webp, options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 32, height: 64)))
        let decoded = try coder.decode(resized, options: .init())
        #expect(decoded.width == 32 && decoded.height == 32)
    }

    @Test func registersWithCodersManagerAndDecodesThroughIt() throws {
        let (data, pixels) = try Self.animation()
        CodersManager.shared.addCoder(WebPCoder.shared)
        #expect(CodersManager.shared.canDecode(data))
        let image = try CodersManager.shared.decode(data, options: .init())
        #expect(image.format == .webp && image.frameCount == 4 && image.pixels.bytes == pixels[0])
        let manager = CodersManager(coders: [WebPCoder.shared])
        let reencoded = try manager.encode(image, as: .webp, options: ImageEncodeOptions(lossless: true))
        let again = try manager.decode(reencoded, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(again.frameCount == 4 && again.frames[2].pixels.bytes == pixels[2])
        #expect(throws: ImageError.self) { try coder.encode(image, as: .gif, options: .init()) }
    }
}
