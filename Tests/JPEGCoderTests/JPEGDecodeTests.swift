import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import JPEGCoder

/// Decoding options: DCT-scaled thumbnails, budget, orientation, bad input, registration.
@Suite struct JPEGDecodeTests {
    static func jpeg(
        _ pixels: PixelBuffer, _ options: ImageEncodeOptions = ImageEncodeOptions(quality: 0.9),
        metadata: ImageMetadata = ImageMetadata()
    ) throws -> Data {
        try JPEGCoder.shared.encode(Image(pixels: pixels, metadata: metadata), as: .jpeg, options: options)
    }

    @Test func thumbnailUsesDCTScalingAndNeverDecodesFullSize() throws {
        let data = try Self.jpeg(JPEGSamples.gradient(width: 4000, height: 3000), ImageEncodeOptions(quality: 0.8))
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 256, height: 256))
        let (image, report) = try JPEGDecoder.decodeReporting(data, options: options)
        #expect(image.width == 256 && image.height == 192)
        #expect(report.scaleNumerator == 1 && report.scaleDenominator == 8)
        #expect(report.decodedWidth == 500 && report.decodedHeight == 375)
        #expect(image.metadata.sourcePixelWidth == 4000 && image.metadata.sourcePixelHeight == 3000)
        // A target reachable exactly by 1/4 scaling needs no resample.
        let quarter = try JPEGDecoder.decodeReporting(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 1000, height: 800)))
        #expect(quarter.report.decodedWidth == 1000 && quarter.report.decodedHeight == 750)
        #expect(quarter.image.width == 1000 && quarter.image.height == 750)
        // The scaled decode still looks like the full image: compare against a 256 px area-average of the source.
        let reference = JPEGSamples.gradient(width: 4000, height: 3000).areaResampled(width: 256, height: 192)
        #expect(JPEGSamples.psnr(image.pixels, reference) >= 30)
    }

    @Test func scalingFactorChoice() {
        #expect(
            JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 800, height: 600)) == (1, 1))
        #expect(
            JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 400, height: 300)) == (1, 2))
        // 1/2 gives 400 < 401; libjpeg-turbo's 5/8 to 7/8 run scalar code that costs more than a full decode and
        // a resample, so the next factor taken is 1.
        #expect(
            JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 401, height: 300)) == (1, 1))
        // 3/8 gives exactly 300x225 but costs more than 1/2 (the thumbnail server's 2 MP → 512 px case).
        #expect(
            JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 300, height: 225)) == (1, 2))
        #expect(
            JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 200, height: 150)) == (1, 4))
        #expect(JPEGDecoder.scalingFactor(width: 800, height: 600, target: PixelSize(width: 10, height: 10)) == (1, 8))
    }

    @Test func scaleDownLimitBytes() throws {
        let data = try Self.jpeg(JPEGSamples.gradient(width: 640, height: 480))
        let image = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions(scaleDownLimitBytes: 320 * 240 * 4))
        #expect(image.width * image.height * 4 <= 320 * 240 * 4)
        #expect(image.width >= 300)
    }

    @Test func pixelBudgetFromCraftedHeader() throws {
        var data = try Self.jpeg(JPEGSamples.gradient(width: 16, height: 16))
        // Patch the SOF0 frame size to 60000x60000.
        let sof = try #require((0..<data.count - 1).first { data[$0] == 0xFF && data[$0 + 1] == 0xC0 })
        data[sof + 5] = 0xEA
        data[sof + 6] = 0x60
        data[sof + 7] = 0xEA
        data[sof + 8] = 0x60
        #expect(
            JPEGCoder.shared.probe(data) == ImageProperties(format: .jpeg, width: 60_000, height: 60_000, frameCount: 1)
        )
        let error = try #require(throws: ImageError.self) {
            try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        }
        #expect(error.code == .imageTooLarge)
        let incremental = JPEGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        incremental.update(data, isFinal: false)
        #expect(throws: ImageError.self) { try incremental.currentImage() }
    }

    @Test func truncatedAndGarbageInputThrowImageError() throws {
        let data = try Self.jpeg(JPEGSamples.gradient(width: 64, height: 64))
        for cut in [0, 2, 3, 20, 100] {
            let error = try #require(throws: ImageError.self) {
                try JPEGCoder.shared.decode(data.prefix(cut), options: ImageDecodeOptions())
            }
            #expect(error.code == .badImageData, "cut at \(cut)")
        }
        let garbage = Data([0xFF, 0xD8, 0xFF]) + Data((0..<400).map { UInt8($0 * 13 & 0xFF) })
        #expect(JPEGCoder.shared.canDecode(garbage))
        let error = try #require(throws: ImageError.self) {
            try JPEGCoder.shared.decode(garbage, options: ImageDecodeOptions())
        }
        #expect(error.stage == .decode && error.underlying is JPEGLibraryError)
        #expect(!JPEGCoder.shared.canDecode(Data([0x89, 0x50, 0x4E, 0x47])))
        #expect(JPEGCoder.shared.probe(Data([0xFF, 0xD8])) == nil)
    }

    @Test func orientationAppliedByDefaultAndKeptOnRequest() throws {
        // 40x20 stored, bright block in the stored top-left corner, EXIF 6 (display = rotate 90° clockwise).
        var pixels = PixelBuffer(width: 40, height: 20, layout: .rgb8)
        pixels.withUnsafeMutableBytes { bytes in
            for y in 0..<8 { for x in 0..<8 { for c in 0..<3 { bytes[(y * 40 + x) * 3 + c] = 255 } } }
        }
        let data = try Self.jpeg(pixels, metadata: ImageMetadata(orientation: .right))
        let shown = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(shown.width == 20 && shown.height == 40)
        #expect(shown.metadata.orientation == .up && shown.metadata.sourceOrientation == .right)
        // Rotating clockwise moves the stored top-left to the displayed top-right.
        #expect(JPEGSamples.mean(shown.pixels, x: 14..<19, y: 1..<6, channel: 0) > 200)
        #expect(JPEGSamples.mean(shown.pixels, x: 1..<6, y: 1..<6, channel: 0) < 50)
        let raw = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.width == 40 && raw.height == 20 && raw.metadata.orientation == .right)
        #expect(JPEGSamples.mean(raw.pixels, x: 1..<6, y: 1..<6, channel: 0) > 200)
        // Thumbnail sizes apply to the displayed (rotated) image.
        let thumb = try JPEGCoder.shared.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 10, height: 10)))
        #expect(thumb.width == 5 && thumb.height == 10)
    }

    @Test func everyOrientationMapsPixelsExactly() {
        // Stored 3x2 gray: 0 1 2 / 3 4 5.
        let source = PixelBuffer(width: 3, height: 2, layout: .gray8, bytes: [0, 1, 2, 3, 4, 5])
        let expected: [ImageOrientation: [UInt8]] = [
            .up: [0, 1, 2, 3, 4, 5], .upMirrored: [2, 1, 0, 5, 4, 3], .down: [5, 4, 3, 2, 1, 0],
            .downMirrored: [3, 4, 5, 0, 1, 2], .leftMirrored: [0, 3, 1, 4, 2, 5], .right: [3, 0, 4, 1, 5, 2],
            .rightMirrored: [5, 2, 4, 1, 3, 0], .left: [2, 5, 1, 4, 0, 3],
        ]
        for orientation in ImageOrientation.allCases {
            let out = source.oriented(orientation)
            #expect(Array(out.bytes) == expected[orientation], "\(orientation)")
            #expect(out.width == (orientation.swapsDimensions ? 2 : 3))
        }
    }

    @Test func grayscaleDecodesToGray8() throws {
        let gray = PixelBuffer(width: 32, height: 16, layout: .gray8, bytes: (0..<512).map { UInt8($0 % 32 * 8) })
        let image = try JPEGCoder.shared.decode(try Self.jpeg(gray), options: ImageDecodeOptions())
        #expect(image.pixels.layout == .gray8)
        #expect(JPEGSamples.psnr(image.pixels, gray) >= 30)
    }

    @Test func registeredInCodersManagerAndDecodedThroughIt() throws {
        let manager = CodersManager()
        manager.addCoder(JPEGCoder.shared)
        let data = try Self.jpeg(JPEGSamples.gradient(width: 30, height: 20))
        let image = try manager.decode(data, options: ImageDecodeOptions())
        #expect(image.format == .jpeg && image.width == 30 && image.height == 20)
        CodersManager.shared.addCoder(JPEGCoder.shared)
        #expect(try CodersManager.shared.decode(data, options: ImageDecodeOptions()).pixels == image.pixels)
    }
}
