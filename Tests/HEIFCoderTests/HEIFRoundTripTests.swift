import Foundation
import HEIFCoder
import ImageCore
import ImageTestSupport
import Testing

/// Encode with the linked libheif's HEVC encoder (x265), decode back through the public API.
@Suite struct HEIFRoundTripTests {
    /// A smooth gradient (HEVC at high quality keeps it within a few levels), with alpha when asked.
    static func gradient(width: Int, height: Int, alpha: Bool) -> PixelBuffer {
        let channels = alpha ? 4 : 3
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * channels
                bytes[i] = UInt8(x * 255 / max(1, width - 1))
                bytes[i + 1] = UInt8(y * 255 / max(1, height - 1))
                bytes[i + 2] = 128
                if alpha { bytes[i + 3] = UInt8(255 - x * 200 / max(1, width - 1)) }
            }
        }
        return PixelBuffer(width: width, height: height, layout: alpha ? .rgba8 : .rgb8, bytes: bytes)
    }

    static func maxDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Int {
        zip(a.bytes, b.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
    }

    @Test func libheifReportsItsEncodersAndHasHEVC() {
        print(
            "libheif \(HEIFCoder.libraryVersion) encoders: \(HEIFCoder.encoders.map { "\($0.id) (\($0.compression))" })"
        )
        #expect(HEIFCoder.encoders.contains { $0.compression == "HEVC" })
        #expect(HEIFCoder.canEncodeHEIC == HEIFCoder.shared.canEncode(to: .heic))
        #expect(!HEIFCoder.shared.canEncode(to: .avif), "AVIF stays with AVIFCoder")
    }

    @Test(arguments: [false, true])
    func encodedHEICDecodesBackCloseToTheSource(alpha: Bool) throws {
        let source = Self.gradient(width: 64, height: 48, alpha: alpha)
        let data = try HEIFCoder.shared.encode(
            Image(pixels: source), as: .heic, options: ImageEncodeOptions(quality: 0.95))
        #expect(ImageFormat.detect(data) == .heic)
        let image = try HEIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.width == 64 && image.height == 48)
        #expect(image.format == .heic)
        #expect(image.pixels.layout == (alpha ? .rgba8 : .rgb8))
        #expect(Self.maxDifference(image.pixels, source) <= 16)
    }
}
