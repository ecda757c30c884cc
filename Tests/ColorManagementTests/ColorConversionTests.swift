import ColorManagement
import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// ImageCore's hook and the lcms2 converter on their own: alpha, mismatched and broken profiles, animations,
/// and the cache key of converted loads.
@Suite struct ColorConversionTests {
    static func solid(_ layout: PixelLayout, _ pixel: [UInt8], alphaMode: AlphaMode? = nil) -> PixelBuffer {
        PixelBuffer(
            width: 4, height: 2, layout: layout, alphaMode: alphaMode,
            bytes: Array((0..<8).map { _ in pixel }.joined()))
    }

    @Test func premultipliedAlphaIsStraightenedAndKept() throws {
        let p3 = try ColorFixtures.bytes("display-p3.icc")
        // Pure P3 red at half coverage, premultiplied: colour 128 stands for 255.
        let premultiplied = Self.solid(.rgba8, [128, 0, 0, 128], alphaMode: .premultiplied)
        let straight = Self.solid(.rgba8, [255, 0, 0, 128], alphaMode: .straight)
        let a = try LCMSColorConverter.shared.convertToSRGB(premultiplied, iccProfile: p3)
        let b = try LCMSColorConverter.shared.convertToSRGB(straight, iccProfile: p3)
        #expect(a.alphaMode == .straight)
        #expect(Array(a.pixel(x: 0, y: 0)) == Array(b.pixel(x: 0, y: 0)))
        #expect(Array(a.pixel(x: 1, y: 1))[3] == 128)
        // P3 red is outside sRGB: clipped red, with no green or blue.
        #expect(Array(b.pixel(x: 0, y: 0))[0] == 255)
    }

    @Test func aProfileThatDoesNotFitThePixelsIsDroppedAndThePixelsKept() throws {
        let gray = Self.solid(.gray8, [90])
        let image = Image(pixels: gray, metadata: ImageMetadata(iccProfile: try ColorFixtures.bytes("display-p3.icc")))
        let converted = try ColorConversion.convert(image, with: LCMSColorConverter.shared)
        #expect(converted.pixels == gray)
        #expect(converted.metadata.iccProfile == nil)
    }

    @Test func aBrokenProfileIsATypedError() throws {
        var junk = [UInt8](repeating: 0xAB, count: 400)
        junk.replaceSubrange(0..<4, with: [0, 0, 1, 144])
        junk.replaceSubrange(16..<20, with: Array("RGB ".utf8))
        junk.replaceSubrange(36..<40, with: Array("acsp".utf8))
        let image = Image(pixels: Self.solid(.rgb8, [1, 2, 3]), metadata: ImageMetadata(iccProfile: junk))
        #expect {
            try ColorConversion.convert(image, with: LCMSColorConverter.shared)
        } throws: { error in
            guard let error = error as? ImageError else { return false }
            return error.code == .badImageData && error.stage == .decode && error.underlying is LCMSError
        }
    }

    @Test func theOptionOffLeavesAnImageAsDecoded() throws {
        let image = Image(
            pixels: Self.solid(.rgb8, [200, 10, 10]),
            metadata: ImageMetadata(iccProfile: try ColorFixtures.bytes("display-p3.icc")))
        #expect(try ColorConversion.apply(to: image, options: ColorFixtures.options(convert: false)) === image)
        let converted = try ColorConversion.apply(to: image, options: ColorFixtures.options(convert: true))
        #expect(converted.metadata.iccProfile == nil)
        #expect(converted.pixels != image.pixels)
    }

    /// Frames an animation decodes later are converted as they come, like the ones held.
    @Test func framesDecodedOnDemandAreConvertedToo() throws {
        struct Provider: AnimatedImageProvider {
            let frame: ImageFrame
            var frameCount: Int { 3 }
            var loopCount: Int { 0 }
            var canvasSize: PixelSize { PixelSize(width: 4, height: 2) }
            func duration(at index: Int) -> Double { 0.1 }
            func frame(at index: Int) throws -> ImageFrame { frame }
        }
        let frame = ImageFrame(pixels: Self.solid(.rgb8, [40, 200, 60]), duration: 0.1)
        let image = Image(
            frames: [frame], frameCount: 3,
            metadata: ImageMetadata(iccProfile: try ColorFixtures.bytes("adobe-rgb.icc")),
            animatedProvider: Provider(frame: frame))
        let converted = try ColorConversion.convert(image, with: LCMSColorConverter.shared)
        #expect(converted.frameCount == 3)
        #expect(try converted.frame(at: 2).pixels == converted.frames[0].pixels)
        #expect(try converted.frame(at: 2).pixels != frame.pixels)
    }

    @Test func convertedLoadsHaveTheirOwnCacheKey() {
        let manager = ImageManager(cache: RecordingCache(), loader: ScriptedLoader())
        let url = URL(string: "https://example.com/photo.heic")!
        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(convertToSRGB: true)
        #expect(
            manager.cacheKey(for: url, context: context) == "https://example.com/photo.heic decode(color(srgb)) .heic")
        context.imageDecodeOptions = ImageDecodeOptions(applyOrientation: false, convertToSRGB: true)
        #expect(
            manager.cacheKey(for: url, context: context)
                == "https://example.com/photo.heic orientation(raw) decode(color(srgb)) .heic")
        #expect(manager.cacheKey(for: url) == "https://example.com/photo.heic")
    }

    @Test func iccHeadersAreReadWithoutAColourEngine() throws {
        #expect(ICCProfileHeader(try ColorFixtures.bytes("press-cmyk.icc"))?.colorModel == .cmyk)
        #expect(ICCProfileHeader(try ColorFixtures.bytes("display-p3.icc"))?.colorModel == .rgb)
        #expect(ICCProfileHeader([0, 1, 2]) == nil)
        let metadata = ImageMetadata(iccProfile: try ColorFixtures.bytes("press-cmyk.icc"))
        #expect(metadata.iccProfile(for: .rgb8) == nil)
        #expect(ImageMetadata(iccProfile: [1, 2, 3]).iccProfile(for: .rgb8) == [1, 2, 3], "unreadable: verbatim")
        let p3 = try ColorFixtures.bytes("display-p3.icc")
        #expect(ImageMetadata(iccProfile: p3).iccProfile(for: .rgba8) == p3)
        #expect(ImageMetadata(iccProfile: p3).iccProfile(for: .gray8) == nil)
    }
}
