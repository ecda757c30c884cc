import Dispatch
import Foundation
import GIFCoder
import ImageCore
import Testing

/// Budget, hostile input, incremental decoding, on-demand frames, sizing and registration.
@Suite struct GIFCoderSafetyTests {
    let coder = GIFCoder.shared

    static func animation(frames: Int = 4, width: Int = 8, height: Int = 8) throws -> (Data, [[UInt8]]) {
        let pixels = (0..<frames).map { GIFCoderTests.palettedPixels(width: width, height: height, seed: $0) }
        let image = makeRGBAImage(
            width: width, height: height, frames: pixels, durations: Array(repeating: 0.2, count: frames))
        return (try GIFCoder.shared.encode(image, as: .gif, options: .init()), pixels)
    }

    @Test func hugeLogicalScreenIsRefusedFromTheHeader() throws {
        var builder = GIFBuilder(width: 65535, height: 65535)
        builder.frames = [.init(width: 1, height: 1, indices: [1])]
        let data = Data(builder.build())
        // The probe reads the header and walks the frame index (one frame here) without decoding anything.
        #expect(coder.probe(data) == ImageProperties(format: .gif, width: 65535, height: 65535, frameCount: 1))
        // A 65535 x 65535 RGBA canvas would be 17 GB: refusing before allocating is the only way this passes.
        let error = #expect(throws: ImageError.self) { try coder.decode(data, options: .init()) }
        #expect(error?.code == .imageTooLarge)
        let viaProvider = #expect(throws: ImageError.self) {
            try coder.makeAnimatedProvider(for: data, options: .init())
        }
        #expect(viaProvider?.code == .imageTooLarge)
    }

    @Test func hugeFrameInASmallScreenIsRefused() throws {
        var builder = GIFBuilder(width: 16, height: 16)
        builder.frames = [.init(width: 1, height: 1, indices: [1])]
        var bytes = builder.build()
        bytes.removeLast()  // trailer
        // A frame declaring 65535 x 65535 (4 G pixels of LZW work) with almost no data.
        bytes += [0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 8, 2, 0x00, 0x01, 0, 0x3B]
        let error = #expect(throws: ImageError.self) { try coder.decode(Data(bytes), options: .init()) }
        #expect(error?.code == .imageTooLarge)
    }

    @Test func smallBudgetRefusesOrdinaryImage() throws {
        let (data, _) = try Self.animation()
        let error = #expect(throws: ImageError.self) {
            try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 63))
        }
        #expect(error?.code == .imageTooLarge)
        #expect(try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 64)).width == 8)
    }

    @Test func garbageAndTruncatedInputThrowImageErrors() throws {
        let (data, _) = try Self.animation()
        let bytes = [UInt8](data)
        for garbage in [
            Data(), Data("GIF89a".utf8), Data("GIF89a".utf8 + [0x10, 0, 0x10, 0, 0, 0, 0, 0xFF, 0xFE, 0xFD]),
        ] {
            let error = #expect(throws: ImageError.self) { try coder.decode(garbage, options: .init()) }
            #expect(error?.code == .badImageData)
        }
        // Every prefix either decodes (cut exactly between frames: the frames so far) or throws badImageData.
        var rejected = 0
        for length in stride(from: 0, to: bytes.count - 1, by: 3) {
            do {
                let image = try coder.decode(
                    Data(bytes[..<length]), options: ImageDecodeOptions(preloadAllFrames: true))
                #expect(image.frameCount >= 1 && image.frameCount < 4)
            } catch let error as ImageError {
                #expect(error.code == .badImageData)
                rejected += 1
            }
        }
        #expect(rejected > 0)
        // Cut inside the first frame (its local colour table).
        let error = #expect(throws: ImageError.self) { try coder.decode(Data(bytes[..<60]), options: .init()) }
        #expect(error?.code == .badImageData)
    }

    @Test func incrementalDecodingEndsEqualToFullDecode() throws {
        let (data, pixels) = try Self.animation()
        let full = try coder.decode(data, options: .init())
        let decoder = coder.makeIncrementalDecoder(options: .init())
        #expect(coder.canIncrementallyDecode(data.prefix(6)))
        var sawNil = false
        var sawPartial = false
        for length in stride(from: 1, to: data.count, by: 7) {
            decoder.update(data.prefix(length), isFinal: false)
            guard let image = try decoder.currentImage() else {
                #expect(!sawPartial, "a partial image never disappears")
                sawNil = true
                continue
            }
            sawPartial = true
            #expect(image.metadata.isPartial)
            #expect(image.frameCount == 1 && image.pixels.bytes == pixels[0])
        }
        #expect(sawNil && sawPartial)
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(!final.metadata.isPartial)
        #expect(final.frameCount == full.frameCount && final.loopCount == full.loopCount)
        for index in 0..<full.frameCount { #expect(try final.frame(at: index) == (try full.frame(at: index))) }
    }

    @Test func onDemandFramesHoldOnlyTheFirstFrame() throws {
        let (data, pixels) = try Self.animation(frames: 5, width: 8, height: 6)
        let frameBytes = 8 * 6 * 4
        let lazy = try coder.decode(data, options: .init())
        #expect(lazy.frames.count == 1 && lazy.frameCount == 5 && lazy.animatedProvider != nil)
        // The held frame plus what the provider retains: the encoded bytes and its compositing canvas(es).
        #expect(lazy.memoryCost == frameBytes + (data.count + frameBytes))
        #expect(lazy.animatedProvider?.retainedByteCount == data.count + frameBytes)
        let preloaded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(preloaded.frames.count == 5 && preloaded.animatedProvider == nil)
        #expect(preloaded.memoryCost == 5 * frameBytes)
        let first = try coder.decode(data, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1 && first.memoryCost == frameBytes)
        // Concurrent requests in any order get the same pixels as the preloaded frames.
        let results = Locked<[Int: [UInt8]]>([:])
        DispatchQueue.concurrentPerform(iterations: 20) { i in
            let index = (i * 3) % 5
            if let frame = try? lazy.frame(at: index) { results.withLock { $0[i] = Array(frame.pixels.bytes) } }
        }
        #expect(results.value.count == 20)
        for (i, bytes) in results.value { #expect(bytes == pixels[(i * 3) % 5]) }
        #expect(throws: ImageError.self) { try lazy.frame(at: 5) }
        let provider = try coder.makeAnimatedProvider(for: data, options: .init())
        #expect(provider.frameCount == 5 && provider.loopCount == 0 && provider.duration(at: 2) == 0.2)
        #expect(try provider.frame(at: 4).pixels.bytes == pixels[4])
    }

    @Test func thumbnailAndMaxPixelSize() throws {
        let (data, _) = try Self.animation(frames: 2, width: 40, height: 20)
        let thumb = try coder.decode(
            data,
            options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 10, height: 10), preloadAllFrames: true))
        #expect(thumb.width == 10 && thumb.height == 5 && thumb.frames.allSatisfy { $0.pixels.width == 10 })
        #expect(thumb.metadata.sourcePixelWidth == 40)
        let lazyThumb = try coder.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 10, height: 10)))
        #expect(try lazyThumb.frame(at: 1).pixels.width == 10)
        let full = try coder.decode(data, options: .init())
        let small = try coder.encode(
            full, as: .gif, options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 20, height: 20)))
        let decodedSmall = try coder.decode(small, options: .init())
        #expect(decodedSmall.width == 20 && decodedSmall.height == 10 && decodedSmall.frameCount == 2)
    }

    @Test func registersWithCodersManagerAndDecodesThroughIt() throws {
        let (data, pixels) = try Self.animation()
        CodersManager.shared.addCoder(GIFCoder.shared)
        #expect(CodersManager.shared.canDecode(data))
        let image = try CodersManager.shared.decode(data, options: .init())
        #expect(image.format == .gif && image.frameCount == 4 && image.pixels.bytes == pixels[0])
        let manager = CodersManager(coders: [GIFCoder.shared])
        #expect(manager.canEncode(to: .gif) && !manager.canEncode(to: .webp))
        let reencoded = try manager.encode(image, as: .gif, options: .init())
        #expect(try manager.decode(reencoded, options: .init()).frameCount == 4)
        #expect(throws: ImageError.self) { try coder.encode(image, as: .png, options: .init()) }
    }
}
