import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// APNG decoding through the public API, on animations written by ``APNGFixtures`` (independent of libpng and of
/// the SDK's encoder), checked pixel by pixel against the specification's compositing.
@Suite struct APNGDecodeTests {
    static let red: [UInt8] = [255, 0, 0, 255]
    static let green: [UInt8] = [0, 255, 0, 255]
    static let blue: [UInt8] = [0, 0, 255, 255]
    static let clear: [UInt8] = [0, 0, 0, 0]
    static let all = ImageDecodeOptions(preloadAllFrames: true)

    static func decode(_ data: Data, _ options: ImageDecodeOptions = all) throws -> Image {
        try PNGCoder.shared.decode(data, options: options)
    }

    static func pixel(_ frame: ImageFrame, _ x: Int, _ y: Int) -> [UInt8] {
        Array(frame.pixels.pixel(x: x, y: y))
    }

    @Test func everyDisposeOpIsAppliedAfterItsFrameWasShown() throws {
        // Frame 0 fills the 4x4 canvas red; frame 1 draws blue at (1,1) 2x2 with the dispose op under test;
        // frame 2 draws a green 1x1 at (3,3), so frame 2 shows what the dispose op left.
        for dispose in APNGFixtures.Dispose.allCases {
            let frames = [
                APNGFixtures.Frame.solid(Self.red, width: 4, height: 4),
                .solid(Self.blue, x: 1, y: 1, width: 2, height: 2, dispose: dispose),
                .solid(Self.green, x: 3, y: 3, width: 1, height: 1),
            ]
            let image = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 4, height: 4, frames: frames)))
            #expect(image.frameCount == 3)
            #expect(Self.pixel(image.frames[1], 1, 1) == Self.blue, "frame 1 is shown before it is disposed of")
            let expected: [UInt8]
            switch dispose {
            case .none: expected = Self.blue
            case .background: expected = Self.clear
            case .previous: expected = Self.red
            }
            #expect(Self.pixel(image.frames[2], 1, 1) == expected, "\(dispose)")
            #expect(Self.pixel(image.frames[2], 2, 2) == expected, "\(dispose)")
            #expect(Self.pixel(image.frames[2], 0, 0) == Self.red)
            #expect(Self.pixel(image.frames[2], 3, 3) == Self.green)
        }
    }

    @Test func disposePreviousOnTheFirstFrameClearsLikeBackground() throws {
        let frames = [
            APNGFixtures.Frame.solid(Self.red, width: 2, height: 2, dispose: .previous),
            .solid(Self.green, x: 1, y: 1, width: 1, height: 1),
        ]
        let image = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 2, height: 2, frames: frames)))
        #expect(Self.pixel(image.frames[1], 0, 0) == Self.clear)
        #expect(Self.pixel(image.frames[1], 1, 1) == Self.green)
    }

    @Test func blendSourceReplacesAndBlendOverComposites() throws {
        let halfGreen: [UInt8] = [0, 255, 0, 128]
        for blend in APNGFixtures.Blend.allCases {
            let frames = [
                APNGFixtures.Frame.solid(Self.red, width: 2, height: 1),
                .solid(halfGreen, width: 2, height: 1, blend: blend),
            ]
            let image = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 2, height: 1, frames: frames)))
            let shown = Self.pixel(image.frames[1], 0, 0)
            switch blend {
            case .source: #expect(shown == halfGreen)
            case .over: #expect(shown == [127, 128, 0, 255], "half green over opaque red")
            }
        }
    }

    /// Random animations (frame rectangles, colours with any alpha, every op) against the reference model.
    @Test func randomAnimationsMatchTheReferenceModel() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["APNG_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("APNGDecodeTests.randomAnimationsMatchTheReferenceModel seed \(seed) (rerun with APNG_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        for _ in 0..<40 {
            let width = Int(random.next() % 9) + 1
            let height = Int(random.next() % 9) + 1
            var frames: [APNGFixtures.Frame] = []
            for index in 0..<Int(random.next() % 5) + 1 {
                let w = index == 0 ? width : Int(random.next() % UInt64(width)) + 1
                let h = index == 0 ? height : Int(random.next() % UInt64(height)) + 1
                let x = index == 0 ? 0 : Int(random.next() % UInt64(width - w + 1))
                let y = index == 0 ? 0 : Int(random.next() % UInt64(height - h + 1))
                let rgba = (0..<w * h * 4).map { _ -> UInt8 in
                    let value = random.next() % 4
                    return value == 0 ? 0 : value == 1 ? 255 : UInt8(truncatingIfNeeded: random.next())
                }
                frames.append(
                    APNGFixtures.Frame(
                        x: x, y: y, width: w, height: h, rgba: rgba,
                        dispose: APNGFixtures.Dispose.allCases[Int(random.next() % 3)],
                        blend: APNGFixtures.Blend.allCases[Int(random.next() % 2)]))
            }
            let hidden = random.next() % 2 == 0 ? [UInt8](repeating: 77, count: width * height * 4) : nil
            let data = APNGFixtures.file(
                APNGFixtures.chunks(width: width, height: height, frames: frames, defaultImage: hidden))
            let image = try Self.decode(data)
            let expected = APNGFixtures.referenceComposite(width: width, height: height, frames: frames)
            #expect(image.frameCount == frames.count, "seed \(seed)")
            for (index, frame) in image.frames.enumerated() {
                let got = frame.pixels.straightRGBABytes()
                for p in stride(from: 0, to: got.count, by: 4) where got[p + 3] != 0 || expected[index][p + 3] != 0 {
                    let difference = (0..<4).map { abs(Int(got[p + $0]) - Int(expected[index][p + $0])) }.max() ?? 0
                    #expect(difference <= 1, "seed \(seed), frame \(index), byte \(p): \(got[p..<p + 4])")
                }
            }
        }
    }

    @Test func theDefaultImageIsAFrameOnlyWhenItsFCTLComesFirst() throws {
        let frames = [
            APNGFixtures.Frame.solid(Self.green, width: 2, height: 2), .solid(Self.blue, width: 2, height: 2),
        ]
        let inside = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 2, height: 2, frames: frames)))
        #expect(inside.frameCount == 2)
        #expect(Self.pixel(inside.frames[0], 0, 0) == Self.green)

        let redDefault = [UInt8](Array(repeating: Self.red, count: 4).joined())
        let data = APNGFixtures.file(
            APNGFixtures.chunks(width: 2, height: 2, frames: frames, defaultImage: redDefault))
        let outside = try Self.decode(data)
        #expect(outside.frameCount == 2, "the hidden default image is not a frame")
        #expect(outside.frames.allSatisfy { Self.pixel($0, 0, 0) != Self.red })
        let first = try Self.decode(data, ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1)
        #expect(Self.pixel(first.frames[0], 0, 0) == Self.green, "the first frame, not the default image")
        #expect(PNGCoder.shared.probe(data)?.frameCount == 2)
    }

    @Test func loopCountAndDelaysComeFromTheChunks() throws {
        var frames = [APNGFixtures.Frame.solid(Self.red, width: 1, height: 1), .solid(Self.blue, width: 1, height: 1)]
        frames += [.solid(Self.green, width: 1, height: 1), .solid(Self.red, width: 1, height: 1)]
        frames[0].delayNumerator = 3
        frames[0].delayDenominator = 4  // 0.75 s
        frames[1].delayNumerator = 25
        frames[1].delayDenominator = 0  // den 0 means 100: 0.25 s
        frames[2].delayNumerator = 0  // 0 s plays at 100 ms, like browsers
        frames[3].delayNumerator = 1
        frames[3].delayDenominator = 1000  // 1 ms plays at 100 ms
        let data = APNGFixtures.file(APNGFixtures.chunks(width: 1, height: 1, frames: frames, loops: 7))
        let image = try Self.decode(data)
        #expect(image.loopCount == 7)
        #expect(image.frames.map(\.duration) == [0.75, 0.25, 0.1, 0.1])
        let forever = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 1, height: 1, frames: frames)))
        #expect(forever.loopCount == 0)
    }

    @Test func framesDecodeOnDemandThroughTheProviderInAnyOrder() throws {
        let colors = [Self.red, Self.green, Self.blue, Self.clear, [9, 8, 7, 255]]
        let frames = colors.map { APNGFixtures.Frame.solid($0, width: 3, height: 2) }
        let data = APNGFixtures.file(APNGFixtures.chunks(width: 3, height: 2, frames: frames))
        let lazy = try Self.decode(data, ImageDecodeOptions())
        #expect(lazy.frames.count == 1)
        #expect(lazy.frameCount == 5)
        #expect(lazy.animatedProvider != nil)
        for index in [4, 1, 3, 0, 2, 2] {
            #expect(Self.pixel(try lazy.frame(at: index), 1, 1) == colors[index], "frame \(index)")
        }
        let provider = try PNGCoder.shared.makeAnimatedProvider(for: data, options: ImageDecodeOptions())
        #expect(provider.frameCount == 5)
        #expect(provider.duration(at: 2) == 0.1)
        #expect(Self.pixel(try provider.frame(at: 3), 0, 0) == Self.clear)
        #expect(throws: ImageError.self) { try provider.frame(at: 5) }
    }

    @Test func thumbnailsScaleEveryFrame() throws {
        let frames = [APNGFixtures.Frame.solid(Self.red, width: 8, height: 4), .solid(Self.blue, width: 8, height: 4)]
        let data = APNGFixtures.file(APNGFixtures.chunks(width: 8, height: 4, frames: frames))
        let image = try Self.decode(
            data, ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 4, height: 4), preloadAllFrames: true))
        #expect(image.width == 4 && image.height == 2)
        #expect(image.frames.map { Self.pixel($0, 1, 1) } == [Self.red, Self.blue])
        #expect(image.metadata.sourcePixelWidth == 8)
    }

    @Test func splitFrameDataAndAllColourTypesOfTheDefaultImageDecode() throws {
        let frames = [
            APNGFixtures.Frame.solid(Self.red, width: 5, height: 3),
            .solid([1, 2, 3, 200], x: 1, y: 1, width: 3, height: 2, blend: .over),
        ]
        let one = try Self.decode(APNGFixtures.file(APNGFixtures.chunks(width: 5, height: 3, frames: frames)))
        let split = try Self.decode(
            APNGFixtures.file(APNGFixtures.chunks(width: 5, height: 3, frames: frames, splitData: 4)))
        #expect(one.frames == split.frames)
    }

    @Test func aStillPNGIsStillOneFrameEverywhere() throws {
        let data = PNGFixtures.make(
            width: 2, height: 2, bitDepth: 8, colorType: .rgb, samples: Array(repeating: 9, count: 12))
        #expect(PNGCoder.shared.probe(data)?.frameCount == 1)
        let image = try Self.decode(data)
        #expect(image.frameCount == 1 && image.pixels.layout == .rgb8)
        let provider = try PNGCoder.shared.makeAnimatedProvider(for: data, options: ImageDecodeOptions())
        #expect(provider.frameCount == 1)
        #expect(try provider.frame(at: 0).pixels == image.pixels)
    }

    @Test func theProbeSaysNothingAboutFramesBeforeTheImageDataArrived() throws {
        let frames = [APNGFixtures.Frame.solid(Self.red, width: 2, height: 2), .solid(Self.blue, width: 2, height: 2)]
        let data = APNGFixtures.file(APNGFixtures.chunks(width: 2, height: 2, frames: frames))
        #expect(PNGCoder.shared.probe(data.prefix(33))?.frameCount == nil)
        #expect(PNGCoder.shared.probe(data.prefix(33))?.width == 2)
        #expect(PNGCoder.shared.probe(data)?.frameCount == 2)
        let insideIDAT = data.range(of: Data("IDAT".utf8))!.upperBound + 10
        #expect(PNGCoder.shared.probe(data.prefix(insideIDAT))?.frameCount == 2, "every chunk before IDAT is there")
    }
}

/// A small seeded generator (SplitMix64) so a failing random case reproduces from its printed seed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
