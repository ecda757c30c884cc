import Dispatch
import Foundation
import GIFCoder
import ImageCore
import Testing

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

/// RGBA of pixel (x, y) of a tightly packed RGBA frame.
func rgbaAt(_ frame: ImageFrame, _ x: Int, _ y: Int) -> [UInt8] { Array(frame.pixels.pixel(x: x, y: y)) }

@Suite struct GIFCoderTests {
    let coder = GIFCoder.shared
    static let red: [UInt8] = [255, 0, 0, 255]
    static let green: [UInt8] = [0, 255, 0, 255]
    static let blue: [UInt8] = [0, 0, 255, 255]
    static let clear: [UInt8] = [0, 0, 0, 0]

    /// 200 distinct opaque colours plus fully transparent pixels.
    static func palettedPixels(width: Int, height: Int, seed: Int = 0) -> [UInt8] {
        var rgba: [UInt8] = []
        for i in 0..<width * height {
            if (i + seed) % 7 == 0 {
                rgba += [0, 0, 0, 0]
            } else {
                let j = (i + seed * 13) % 200
                rgba += [UInt8(j), UInt8(255 - j), UInt8((j * 7) % 256), 255]
            }
        }
        return rgba
    }

    @Test func staticRoundTripIsExactUpTo256Colours() throws {
        let rgba = Self.palettedPixels(width: 24, height: 16)
        let data = try coder.encode(makeRGBAImage(width: 24, height: 16, frames: [rgba]), as: .gif, options: .init())
        #expect(ImageFormat.detect(data) == .gif)
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.width == 24 && decoded.height == 16 && decoded.frameCount == 1 && decoded.format == .gif)
        #expect(decoded.pixels.layout == .rgba8)
        #expect(decoded.pixels.bytes == rgba)
    }

    @Test func grayAndPremultipliedInputsAreConverted() throws {
        let gray = PixelBuffer(width: 4, height: 1, layout: .gray8, bytes: [0, 60, 120, 250])
        let decoded = try coder.decode(
            try coder.encode(Image(pixels: gray), as: .gif, options: .init()), options: .init())
        #expect(decoded.pixels.bytes == [0, 0, 0, 255, 60, 60, 60, 255, 120, 120, 120, 255, 250, 250, 250, 255])
        let premultiplied = PixelBuffer(
            width: 2, height: 1, layout: .rgba8, alphaMode: .premultiplied, bytes: [128, 0, 0, 255, 100, 50, 0, 200])
        let decoded2 = try coder.decode(
            try coder.encode(Image(pixels: premultiplied), as: .gif, options: .init()), options: .init())
        #expect(decoded2.pixels.bytes == [128, 0, 0, 255, 128, 64, 0, 255])
    }

    @Test func moreThan256ColoursAreQuantizedClosely() throws {
        var rgba: [UInt8] = []
        for y in 0..<64 { for x in 0..<64 { rgba += [UInt8(x * 4), UInt8(y * 4), UInt8((x + y) * 2), 255] } }
        let data = try coder.encode(makeRGBAImage(width: 64, height: 64, frames: [rgba]), as: .gif, options: .init())
        let decoded = try coder.decode(data, options: .init())
        #expect(decoded.width == 64 && decoded.height == 64)
        var distinct = Set<[UInt8]>()
        var totalError = 0
        for i in 0..<64 * 64 {
            distinct.insert(Array(decoded.pixels.bytes[i * 4..<i * 4 + 4]))
            for c in 0..<3 { totalError += abs(Int(decoded.pixels.bytes[i * 4 + c]) - Int(rgba[i * 4 + c])) }
        }
        #expect(distinct.count <= 256)
        #expect(distinct.count > 64)
        #expect(Double(totalError) / Double(64 * 64 * 3) < 6, "mean absolute error per channel")
    }

    @Test(arguments: [0, 3, 1])
    func animatedRoundTripKeepsFramesDurationsAndLoopCount(loopCount: Int) throws {
        let frames = (0..<3).map { Self.palettedPixels(width: 10, height: 6, seed: $0) }
        let image = makeRGBAImage(
            width: 10, height: 6, frames: frames, durations: [0.1, 0.25, 0.5], loopCount: loopCount)
        let data = try coder.encode(image, as: .gif, options: .init())
        let decoded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(decoded.frameCount == 3 && decoded.frames.count == 3)
        #expect(decoded.loopCount == loopCount)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.25, 0.5])
        for index in 0..<3 { #expect(decoded.frames[index].pixels.bytes == frames[index], "frame \(index)") }
        let first = try coder.decode(
            try coder.encode(image, as: .gif, options: ImageEncodeOptions(firstFrameOnly: true)), options: .init())
        #expect(first.frameCount == 1 && first.pixels.bytes == frames[0])
    }

    /// Keep (1), restore previous (3), restore background (2) and unspecified (0), with a transparent index.
    static func disposalAnimation() -> [UInt8] {
        var builder = GIFBuilder(width: 4, height: 4)
        builder.frames = [
            .init(width: 4, height: 4, indices: Array(repeating: 1, count: 16), disposal: 1),
            .init(left: 1, top: 1, width: 2, height: 2, indices: [2, 2, 2, 2], disposal: 3),
            .init(width: 2, height: 2, indices: [0, 3, 3, 3], disposal: 2, transparentIndex: 0),
            .init(left: 3, top: 3, width: 1, height: 1, indices: [2], disposal: 0),
        ]
        return builder.build()
    }

    static func expectedDisposalCanvases() -> [[[[UInt8]]]] {
        let allRed = Array(repeating: Array(repeating: red, count: 4), count: 4)  // [y][x]
        var f1 = allRed
        for (x, y) in [(1, 1), (2, 1), (1, 2), (2, 2)] { f1[y][x] = green }
        var f2 = allRed  // frame 1 restored to frame 0, then blue with (0,0) transparent
        for (x, y) in [(1, 0), (0, 1), (1, 1)] { f2[y][x] = blue }
        var f3 = f2  // frame 2's rectangle cleared to transparent, then green at (3,3)
        for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1)] { f3[y][x] = clear }
        f3[3][3] = green
        return [allRed, f1, f2, f3]
    }

    @Test func disposalMethodsCompositeLikeBrowsers() throws {
        let data = Data(Self.disposalAnimation())
        let expected = Self.expectedDisposalCanvases()
        let preloaded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(preloaded.frameCount == 4 && preloaded.loopCount == 0)
        let onDemand = try coder.decode(data, options: .init())
        func check(_ frame: ImageFrame, _ index: Int) {
            for y in 0..<4 {
                for x in 0..<4 {
                    #expect(rgbaAt(frame, x, y) == expected[index][y][x], "frame \(index) (\(x),\(y))")
                }
            }
        }
        // Out-of-order requests force the provider to restart from frame 0.
        for index in [3, 1, 2, 0, 3] {
            check(preloaded.frames[index], index)
            check(try onDemand.frame(at: index), index)
        }
        // A frame at full size shares the compositor's canvas: drawing the next frames must copy it, not change it.
        let kept = try (0..<4).map { try onDemand.frame(at: $0) }
        for index in 0..<4 { check(kept[index], index) }
    }

    @Test func framesOutsideTheCanvasAreClipped() throws {
        var builder = GIFBuilder(width: 3, height: 3)
        builder.frames = [
            .init(width: 3, height: 3, indices: Array(repeating: 1, count: 9)),
            .init(left: 2, top: 2, width: 3, height: 3, indices: Array(repeating: 2, count: 9)),
            .init(left: 10, top: 10, width: 2, height: 2, indices: [3, 3, 3, 3]),
        ]
        let image = try coder.decode(Data(builder.build()), options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(image.width == 3 && image.height == 3 && image.frameCount == 3)
        #expect(rgbaAt(image.frames[1], 2, 2) == Self.green)
        #expect(rgbaAt(image.frames[1], 1, 2) == Self.red)
        #expect(image.frames[2].pixels.bytes == image.frames[1].pixels.bytes)
    }

    @Test func interlacedFramesWithLocalPaletteAnd87a() throws {
        let width = 3
        let height = 11
        var indices: [UInt8] = []
        for y in 0..<height { indices += Array(repeating: UInt8(y % 4), count: width) }
        let palette: [(UInt8, UInt8, UInt8)] = [(10, 20, 30), (40, 50, 60), (70, 80, 90), (100, 110, 120)]
        for version in ["GIF87a", "GIF89a"] {
            var builder = GIFBuilder(width: width, height: height)
            builder.version = version
            builder.loopCount = nil
            builder.globalPalette = nil
            builder.frames = [
                .init(
                    width: width, height: height, indices: indices, localPalette: palette, interlaced: true,
                    writeControl: version == "GIF89a")
            ]
            let image = try coder.decode(Data(builder.build()), options: .init())
            #expect(image.loopCount == 1, "no NETSCAPE2.0 extension: plays once")
            for y in 0..<height {
                let c = palette[y % 4]
                #expect(rgbaAt(image.frames[0], 1, y) == [c.0, c.1, c.2, 255], "\(version) row \(y)")
            }
        }
    }

    @Test func tinyDelaysAreClampedLikeBrowsers() throws {
        var builder = GIFBuilder(width: 1, height: 1)
        builder.frames = [0, 1, 2, 5].map { .init(width: 1, height: 1, indices: [1], delayCentiseconds: $0) }
        let image = try coder.decode(Data(builder.build()), options: ImageDecodeOptions(preloadAllFrames: true))
        #expect(image.frames.map(\.duration) == [0.1, 0.1, 0.02, 0.05])
    }
}
