import AVIFCoder
import ColorManagement
import Foundation
import HEIFCoder
import ImageCore
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Pixels that are not sRGB keep their profile through every encoder (JPEG APP2, PNG iCCP, WebP ICCP, AVIF and
/// HEIC `colr`), and any coder's decode converts through it: P3 pixels re-encoded by each coder, decoded with
/// conversion, still match Pillow's reference for the original.
@Suite struct EncoderProfileTests {
    let coders = CodersManager(coders: [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
    ])

    struct Case: Sendable, CustomStringConvertible {
        let format: ImageFormat
        let options: ImageEncodeOptions
        /// Lossy encoders move pixels before any conversion: their bound is the encoder's error plus the
        /// conversion's, stated per case.
        let maxMean: Double
        let maxWorst: Double
        var description: String { "\(format)\(options.lossless ? " lossless" : "")" }
    }

    static let cases: [Case] = [
        Case(format: .png, options: ImageEncodeOptions(), maxMean: 1, maxWorst: 3),
        Case(format: .webp, options: ImageEncodeOptions(lossless: true), maxMean: 1, maxWorst: 3),
        Case(format: .avif, options: ImageEncodeOptions(lossless: true), maxMean: 1, maxWorst: 3),
        Case(format: .jpeg, options: ImageEncodeOptions(quality: 1, chromaSubsampling: .s444), maxMean: 1, maxWorst: 3),
        // libheif stores HEVC as 8-bit YCbCr: the round trip alone moves saturated colours by up to ~3 ΔE.
        Case(format: .heic, options: ImageEncodeOptions(quality: 1, chromaSubsampling: .s444), maxMean: 1, maxWorst: 5),
    ]

    @Test(arguments: cases)
    func p3PixelsSurviveAnEncodeAndConvertLikeTheOriginal(_ testCase: Case) throws {
        let source = try coders.decode(ColorFixtures.data("p3.png"), options: ColorFixtures.options(convert: false))
        let profile = try ColorFixtures.bytes("display-p3.icc")
        #expect(source.metadata.iccProfile == profile)
        let encoded = try coders.encode(source, as: testCase.format, options: testCase.options)
        let carried = try coders.decode(encoded, options: ColorFixtures.options(convert: false))
        #expect(carried.metadata.iccProfile == profile, "\(testCase) embeds the profile")
        let converted = try coders.decode(encoded, options: ColorFixtures.options(convert: true))
        #expect(converted.metadata.iccProfile == nil)
        let (mean, worst) = ColorFixtures.deltaE(converted.pixels, reference: try ColorFixtures.bytes("p3.srgb"))
        print("\(testCase): ΔE76 mean \(mean), max \(worst) after encode, decode and conversion")
        #expect(mean < testCase.maxMean && worst < testCase.maxWorst, "\(testCase): mean \(mean), max \(worst)")
    }

    /// sRGB pixels (after a conversion) are written with no profile at all.
    @Test(arguments: [ImageFormat.png, .jpeg, .webp, .avif, .heic])
    func convertedPixelsAreWrittenWithoutAProfile(_ format: ImageFormat) throws {
        let converted = try coders.decode(ColorFixtures.data("p3.png"), options: ColorFixtures.options(convert: true))
        let encoded = try coders.encode(converted, as: format, options: ImageEncodeOptions(quality: 0.9))
        #expect(try coders.decode(encoded, options: ColorFixtures.options(convert: false)).metadata.iccProfile == nil)
    }

    /// A CMYK JPEG decoded without conversion has RGB pixels and its CMYK profile in the metadata: no encoder
    /// may label RGB pixels with it (libpng would refuse the file outright).
    @Test(arguments: [ImageFormat.png, .jpeg, .webp, .avif, .heic])
    func aCMYKProfileIsNeverWrittenOnRGBPixels(_ format: ImageFormat) throws {
        let cmyk = try coders.decode(
            ColorFixtures.data("cmyk-adobe.jpg"), options: ColorFixtures.options(convert: false))
        #expect(cmyk.metadata.iccProfile == (try ColorFixtures.bytes("press-cmyk.icc")))
        let encoded = try coders.encode(cmyk, as: format, options: ImageEncodeOptions(quality: 0.9))
        #expect(try coders.decode(encoded, options: ColorFixtures.options(convert: false)).metadata.iccProfile == nil)
    }
}
