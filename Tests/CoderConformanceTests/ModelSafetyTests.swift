import Foundation
import ImageCore
import Testing

/// The model's invariants hold whoever builds the values (issue 13 item 1): pixel storage can never be shorter
/// than its geometry, durations and qualities can always be turned into integers, sizes never overflow.
@Suite struct ModelSafetyTests {
    @Test func pixelBufferRefusesGeometryItsBytesCannotHold() {
        let cases: [(Int, Int, Int?, Int)] = [
            (10, 10, nil, 399), (-1, 1, nil, 0), (1, -1, nil, 0), (4, 1, 3, 16), (Int.max, 1, nil, 0),
            (1 << 40, 0, nil, 0), (3, Int.max / 2, nil, 0), (2, 2, Int.max, 8),
        ]
        for (width, height, bytesPerRow, count) in cases {
            let error = #expect(throws: ImageError.self) {
                try PixelBuffer(
                    width: width, height: height, layout: .rgba8, bytesPerRow: bytesPerRow,
                    validating: [UInt8](repeating: 0, count: count))
            }
            #expect(error?.code == .badImageData, "\(width)x\(height) rowBytes \(String(describing: bytesPerRow))")
        }
        #expect(throws: ImageError.self) { try PixelBuffer(zeroedWidth: .max, height: .max, layout: .rgba8) }
        let fine = try? PixelBuffer(
            width: 2, height: 2, layout: .rgb8, bytesPerRow: 8, validating: [UInt8](repeating: 1, count: 16))
        #expect(fine?.bytesPerRow == 8)
    }

    @Test func pixelsMutateInPlaceWithoutChangingTheirCount() {
        var buffer = PixelBuffer(width: 3, height: 2, layout: .gray8)
        buffer.withUnsafeMutableBytes { bytes in
            for i in bytes.indices { bytes[i] = UInt8(i) }
        }
        #expect(buffer.bytes == [0, 1, 2, 3, 4, 5] && buffer.byteCount == 6)
        #expect(buffer.pixel(x: 2, y: 1) == [5])
    }

    /// `bytes` used to be a plain `var`: `buffer.bytes = []` left a 3x2 buffer with no storage, and every reader
    /// indexing by geometry went out of bounds. It is now a copy (get-only), and the storage's length is fixed: a
    /// write goes through `withUnsafeMutableBytes`, whose buffer cannot change its count, and a write to a shared
    /// buffer copies first, so the other value keeps its pixels.
    @Test func writesCannotBreakTheGeometryOrReachAnotherValue() {
        let original = PixelBuffer(width: 3, height: 2, layout: .rgba8, bytes: [UInt8](repeating: 9, count: 24))
        var buffer = original
        #expect(buffer.sharesStorage(with: original))
        buffer.withUnsafeMutableBytes { bytes in
            #expect(bytes.count == 24)
            bytes[5] = 7
        }
        #expect(!buffer.sharesStorage(with: original))
        #expect(buffer.byteCount == 24 && buffer.bytes[5] == 7)
        #expect(original.bytes == [UInt8](repeating: 9, count: 24))
        var copy = Array(buffer.bytes)
        copy[0] = 1
        #expect(buffer.bytes[0] == 9, "bytes is a copy")
        let image = Image(pixels: buffer)
        #expect(image.pixels.straightRGBABytes().count == 24)
    }

    @Test(arguments: [
        (Double.nan, 0.0), (.infinity, ImageFrame.maximumDuration), (-.infinity, 0), (-3, 0),
        (1e300, ImageFrame.maximumDuration),
        (0.25, 0.25),
    ])
    func frameDurationsAreAlwaysFiniteAndBounded(input: Double, expected: Double) {
        var frame = ImageFrame(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8), duration: input)
        #expect(frame.duration == expected)
        frame.duration = input
        #expect(frame.duration == expected)
    }

    @Test func encodeQualityIsAlwaysInRange() {
        #expect(ImageEncodeOptions(quality: .nan).quality == 0.85)
        #expect(ImageEncodeOptions(quality: 7).quality == 1)
        var options = ImageEncodeOptions()
        options.quality = -.infinity
        #expect(options.quality == 0)
    }

    @Test func targetSizeNeverTrapsOnDegenerateOrHugeSources() {
        var options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 100, height: 100))
        options.scaleDownLimitBytes = 1_000_000
        #expect(options.targetSize(forSourceWidth: 0, height: 0) == PixelSize(width: 0, height: 0))
        #expect(options.targetSize(forSourceWidth: -5, height: 10) == PixelSize(width: -5, height: 10))
        let huge = ImageDecodeOptions(scaleDownLimitBytes: 4_000_000).targetSize(forSourceWidth: .max, height: .max)
        #expect(huge.width >= 1 && huge.height >= 1 && huge.width <= 1_000 && huge.height <= 1_000)
    }

    @Test func animationBudgetArithmeticCannotOverflow() {
        let budget = AnimationBudget()
        #expect(throws: ImageError.self) { try budget.checkMaterialization(frameCount: .max, pixelsPerFrame: .max) }
        var spent = Int.max - 1
        #expect(throws: ImageError.self) { try AnimationBudget.unlimited.spendWork(10, from: &spent) }
        #expect(throws: Never.self) { try budget.checkMaterialization(frameCount: 200, pixelsPerFrame: 1_000_000) }
        #expect(throws: ImageError.self) { try budget.checkMaterialization(frameCount: 201, pixelsPerFrame: 1_000_000) }
        #expect(throws: ImageError.self) { try budget.checkFrameCount(10_001) }
    }

    @Test func imageMaterialisationFollowsItsBudgetsPolicy() throws {
        let frame = ImageFrame(pixels: PixelBuffer(width: 10, height: 10, layout: .gray8), duration: 0.1)
        let frames = Array(repeating: frame, count: 5)
        let strict = Image(frames: frames, animationBudget: AnimationBudget(maxPixelCount: 400))
        #expect(throws: ImageError.self) { try strict.framesWithinBudget(stage: .transform) }
        let lenient = Image(
            frames: frames, animationBudget: AnimationBudget(maxPixelCount: 400, onExceeded: .firstFrameOnly))
        #expect(try lenient.framesWithinBudget(stage: .encode) == 1)
        #expect(try Image(frames: frames).framesWithinBudget(stage: .encode) == 5)
        #expect(lenient.with(metadata: ImageMetadata()).animationBudget == lenient.animationBudget)
    }
}
