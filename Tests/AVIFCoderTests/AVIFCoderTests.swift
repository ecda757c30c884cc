import AVIFCoder
import CAVIF
import Foundation
import ImageCore
import Testing

/// What an app does with AVIF: register the coder, decode stills of every kind, encode and read back.
@Suite struct AVIFCoderTests {
    let coder = AVIFCoder.shared

    @Test func registeredCoderDecodesAVIFBytesSniffedFromTheFtypBrand() throws {
        let data = AVIFTestFiles.encode(.init())
        #expect(ImageFormat.detect(data) == .avif)
        #expect(coder.canDecode(data))
        #expect(!coder.canDecode(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])))
        #expect(coder.probe(data) == ImageProperties(format: .avif, width: 64, height: 48, frameCount: 1))
        let manager = CodersManager(coders: [coder])
        let image = try manager.decode(data, options: .init())
        #expect(image.format == .avif && image.width == 64 && image.height == 48 && image.frameCount == 1)
        #expect(coder.canEncode(to: .avif) == AVIFCoder.hasEncoder)
        #expect(!coder.canEncode(to: .webp))
        #expect(AVIFCoder.hasDecoder && AVIFCoder.codecVersions.contains("dec"))
    }

    @Test func formatIsSniffedFromTheMajorOrACompatibleBrand() {
        func ftyp(_ major: String, _ compatible: [String]) -> Data {
            let body = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
            return Data([0, 0, 0, UInt8(8 + body.count)] + Array("ftyp".utf8) + body)
        }
        #expect(ImageFormat.detect(ftyp("avis", ["avis", "msf1", "miaf"])) == .avif)
        #expect(ImageFormat.detect(ftyp("mif1", ["mif1", "miaf", "avif"])) == .avif)
        #expect(ImageFormat.detect(ftyp("heic", ["mif1", "heic"])) == .heic)
        #expect(!coder.canDecode(ftyp("heic", ["mif1", "heic"])))
        #expect(coder.canDecode(ftyp("mif1", ["avif"])))
    }

    @Test func losslessFileDecodesToTheExactPixelsWithStraightAlpha() throws {
        let data = AVIFTestFiles.encode(.init(alpha: true))
        let image = try coder.decode(data, options: .init())
        #expect(image.pixels.layout == .rgba8 && image.pixels.alphaMode == .straight)
        #expect(image.pixels.bytes == AVIFTestFiles.pattern(width: 64, height: 48, alpha: true))
    }

    @Test func opaqueFileDecodesToRGBWithoutAlpha() throws {
        let image = try coder.decode(AVIFTestFiles.encode(.init()), options: .init())
        #expect(image.pixels.layout == .rgb8 && image.pixels.alphaMode == .none)
        let rgba = AVIFTestFiles.pattern(width: 64, height: 48, alpha: false)
        let rgb = stride(from: 0, to: rgba.count, by: 4).flatMap { rgba[$0..<$0 + 3] }
        #expect(image.pixels.bytes == rgb)
    }

    @Test(arguments: [UInt32(10), 12])
    func highBitDepthFilesDecodeTo8Bits(depth: UInt32) throws {
        let data = AVIFTestFiles.encode(.init(depth: depth, alpha: true))
        let image = try coder.decode(data, options: .init())
        #expect(image.pixels.layout == .rgba8)
        let expected = PixelBuffer(
            width: 64, height: 48, layout: .rgba8, alphaMode: .straight,
            bytes: AVIFTestFiles.pattern(width: 64, height: 48, alpha: true))
        // 8 → N → 8 bits through libavif's conversions: off by at most one step.
        #expect(meanAbsoluteDifference(image.pixels, expected) < 1.0)
    }

    @Test func monochromeFileDecodesToGray() throws {
        let data = AVIFTestFiles.encode(.init(format: AVIF_PIXEL_FORMAT_YUV400, lossless: false))
        let image = try coder.decode(data, options: .init())
        #expect(image.pixels.layout == .gray8 && image.width == 64)
        let withAlpha = try coder.decode(
            AVIFTestFiles.encode(.init(format: AVIF_PIXEL_FORMAT_YUV400, alpha: true, lossless: false)),
            options: .init())
        #expect(withAlpha.pixels.layout == .grayAlpha8 && withAlpha.pixels.alphaMode == .straight)
    }

    @Test func premultipliedFileStaysPremultipliedAndSaysSo() throws {
        let data = AVIFTestFiles.encode(.init(alpha: true, premultiplied: true))
        let image = try coder.decode(data, options: .init())
        #expect(image.pixels.alphaMode == .premultiplied)
        // The stored samples were written as is: the decoded bytes are those samples, not unpremultiplied ones.
        #expect(image.pixels.bytes == AVIFTestFiles.pattern(width: 64, height: 48, alpha: true))
        let straight = image.pixels.straightRGBABytes()
        #expect(straight != image.pixels.bytes)
    }

    @Test func rotationMirrorAndCleanApertureAreAppliedByDefaultAndReportedWhenRaw() throws {
        // Stored 64x48; clap keeps 40x30 at (8, 6); irot 1 = 90° anticlockwise; imir 1 = left-right.
        let spec = AVIFTestFiles.Spec(rotation: 1, mirror: 1, crop: (8, 6, 40, 30))
        let data = AVIFTestFiles.encode(spec)
        let shown = try coder.decode(data, options: .init())
        #expect(shown.width == 30 && shown.height == 40)
        #expect(shown.metadata.orientation == .up && shown.metadata.sourceOrientation == .rightMirrored)
        #expect(shown.metadata.sourcePixelWidth == 64 && shown.metadata.sourcePixelHeight == 48)
        let raw = try coder.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.width == 64 && raw.height == 48 && raw.metadata.orientation == .rightMirrored)
        // Rotating 90° anticlockwise then mirroring left-right is a transverse: displayed (x, y) = stored
        // (crop.x + crop.width - 1 - y, crop.y + crop.height - 1 - x).
        for (x, y) in [(0, 0), (29, 0), (0, 39), (12, 17)] {
            let stored = raw.pixels.pixel(x: 8 + 39 - y, y: 6 + 29 - x)
            #expect(shown.pixels.pixel(x: x, y: y) == stored, "(\(x), \(y))")
        }
    }

    @Test(arguments: [
        (UInt8(0), UInt8?.none, ImageOrientation.up), (1, nil, .left), (2, nil, .down), (3, nil, .right),
        (0, 0, .downMirrored), (0, 1, .upMirrored), (1, 0, .leftMirrored), (3, 1, .leftMirrored),
        (3, 0, .rightMirrored), (2, 1, .downMirrored),
    ])
    func everyRotationAndMirrorMapsToItsExifOrientation(rotation: UInt8, mirror: UInt8?, expected: ImageOrientation)
        throws
    {
        let data = AVIFTestFiles.encode(.init(width: 16, height: 8, rotation: rotation, mirror: mirror))
        let raw = try coder.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.metadata.orientation == expected)
        let shown = try coder.decode(data, options: .init())
        #expect(shown.width == (expected.swapsDimensions ? 8 : 16))
    }

    @Test func iccProfileAndExifAreKept() throws {
        let icc = [UInt8](repeating: 7, count: 300)
        let exif: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 0]
        let image = try coder.decode(AVIFTestFiles.encode(.init(exif: exif, icc: icc)), options: .init())
        #expect(image.metadata.iccProfile == icc)
        #expect(image.metadata.exif == exif)
    }

    @Test func gridImageDecodesToItsOutputSize() throws {
        // Grid cells must be at least 64x64 (MIAF); 2 columns x 3 rows of 64x64 cells.
        let data = AVIFTestFiles.encode(.init(width: 128, height: 192, grid: (2, 3)))
        #expect(coder.probe(data)?.width == 128 && coder.probe(data)?.height == 192)
        let image = try coder.decode(data, options: .init())
        #expect(image.pixels.bytes.count == 128 * 192 * 3)
        let rgba = AVIFTestFiles.pattern(width: 128, height: 192, alpha: false)
        let rgb = stride(from: 0, to: rgba.count, by: 4).flatMap { rgba[$0..<$0 + 3] }
        #expect(image.pixels.bytes == rgb)
    }

    @Test func thumbnailFitsTheRequestedBoxAfterTheTransforms() throws {
        let data = AVIFTestFiles.encode(.init(width: 64, height: 48, rotation: 1))
        let image = try coder.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 24, height: 24)))
        #expect(image.width == 18 && image.height == 24)
        #expect(image.metadata.sourcePixelWidth == 64)
    }
}
