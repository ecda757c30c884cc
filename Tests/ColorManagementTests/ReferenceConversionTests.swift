import AVIFCoder
import ColorManagement
import Foundation
import HEIFCoder
import ImageCore
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Conversions to sRGB checked against Pillow's ImageCms (lcms2 2.14) on the committed fixtures: Display P3,
/// Adobe RGB (1998) and CMYK (Adobe-inverted and plain) sources. ΔE is CIE76 in CIELAB; each source must come
/// out within a mean of 1 and a maximum of 3.
@Suite struct ReferenceConversionTests {
    let coders = CodersManager(coders: [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
    ])

    func check(_ file: String, reference: String, profile: String, line: Int = #line) throws {
        let data = try ColorFixtures.data(file)
        let expected = try ColorFixtures.bytes(reference)
        let converted = try coders.decode(data, options: ColorFixtures.options(convert: true))
        #expect(converted.metadata.iccProfile == nil, "converted pixels are sRGB: no profile left")
        let (mean, worst) = ColorFixtures.deltaE(converted.pixels, reference: expected)
        print("\(file): ΔE76 mean \(mean), max \(worst) against Pillow ImageCms")
        #expect(mean < 1 && worst < 3, "\(file): mean \(mean), max \(worst)")

        // The option is what changes the colours: off, the file's pixels and profile come as they are, and they
        // are far from the reference (so the check above can fail).
        let untouched = try coders.decode(data, options: ColorFixtures.options(convert: false))
        #expect(untouched.metadata.iccProfile == (try ColorFixtures.bytes(profile)))
        #expect(ColorFixtures.deltaE(untouched.pixels, reference: expected).mean > 2)
    }

    @Test func displayP3PNG() throws {
        try check("p3.png", reference: "p3.srgb", profile: "display-p3.icc")
    }

    @Test func adobeRGBJPEG() throws {
        try check("adobergb.jpg", reference: "adobergb.srgb", profile: "adobe-rgb.icc")
    }

    @Test func adobeInvertedCMYKJPEG() throws {
        try check("cmyk-adobe.jpg", reference: "cmyk-adobe.srgb", profile: "press-cmyk.icc")
    }

    @Test func plainCMYKJPEG() throws {
        try check("cmyk-plain.jpg", reference: "cmyk-plain.srgb", profile: "press-cmyk.icc")
    }

    /// Untagged CMYK has no profile to convert through: the naive formula (what the JPEG coder always did, and
    /// what browsers do) is the answer, with the option on or off.
    @Test func cmykWithoutAProfileUsesTheNaiveFormula() throws {
        let tagged = try ColorFixtures.bytes("cmyk-adobe.jpg")
        let untagged = Data(JPEGSegments.removingICC(tagged))
        #expect(untagged.count < tagged.count)
        let converted = try coders.decode(untagged, options: ColorFixtures.options(convert: true))
        let plain = try coders.decode(untagged, options: ColorFixtures.options(convert: false))
        #expect(converted.pixels == plain.pixels)
        #expect(converted.metadata.iccProfile == nil && plain.metadata.iccProfile == nil)
    }

    /// An sRGB profile needs no work: the converter sees it is the identity and returns the pixels as they were.
    @Test func anSRGBProfileLeavesThePixelsAlone() throws {
        let source = try coders.decode(ColorFixtures.data("p3.png"), options: ColorFixtures.options(convert: false))
        let converted = try LCMSColorConverter.shared.convertToSRGB(
            source.pixels, iccProfile: ColorFixtures.bytes("srgb.icc"))
        #expect(converted == source.pixels)
    }
}

/// Reads and rewrites JPEG marker segments for the tests.
enum JPEGSegments {
    /// The file without its APP2 `ICC_PROFILE` segments.
    static func removingICC(_ jpeg: [UInt8]) -> [UInt8] {
        var out = Array(jpeg[0..<2])
        var i = 2
        while i + 4 <= jpeg.count {
            let marker = jpeg[i + 1]
            let length = Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3])
            if marker == 0xDA {
                out += jpeg[i...]
                break
            }
            let isICC = marker == 0xE2 && Array(jpeg[(i + 4)..<(i + 16)]) == Array("ICC_PROFILE\0".utf8)
            if !isICC { out += jpeg[i..<(i + 2 + length)] }
            i += 2 + length
        }
        return out
    }
}
