import CJPEG
import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import JPEGCoder

/// Encoding: PSNR round trips, progressive, subsampling, alpha over background, size limits, metadata.
@Suite struct JPEGEncodeTests {
    static func header(_ data: Data) throws -> JPEGHeader {
        try data.withUnsafeBytes { try TurboJPEG.decompressor().header($0) }
    }

    static func hasMarker(_ data: Data, _ marker: UInt8) -> Bool {
        (0..<data.count - 1).contains { data[$0] == 0xFF && data[$0 + 1] == marker }
    }

    @Test(arguments: [false, true])
    func roundTripAboveStatedPSNR(progressive: Bool) throws {
        let source = JPEGSamples.gradient(width: 256, height: 192)
        let data = try JPEGCoder.shared.encode(
            Image(pixels: source), as: .jpeg, options: ImageEncodeOptions(quality: 0.9, progressive: progressive))
        #expect(Self.hasMarker(data, 0xC2) == progressive)
        let decoded = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.pixels.layout == .rgb8)
        #expect(JPEGSamples.psnr(decoded.pixels, source) >= 30)
    }

    @Test func subsamplingIsHonoured() throws {
        let image = Image(pixels: JPEGSamples.gradient(width: 64, height: 64))
        let cases: [(ChromaSubsampling?, TJSAMP)] = [
            (nil, TJSAMP_420), (.s444, TJSAMP_444), (.s422, TJSAMP_422), (.s420, TJSAMP_420), (.gray, TJSAMP_GRAY),
        ]
        for (option, expected) in cases {
            let data = try JPEGCoder.shared.encode(
                image, as: .jpeg, options: ImageEncodeOptions(chromaSubsampling: option))
            #expect(try Self.header(data).subsampling == Int32(expected.rawValue), "\(String(describing: option))")
        }
    }

    @Test func alphaIsCompositedOverBackground() throws {
        var rgba = PixelBuffer(width: 16, height: 16, layout: .rgba8)
        rgba.withUnsafeMutableBytes { bytes in
            for i in 0..<(16 * 8) { bytes[i * 4 + 1] = 255; bytes[i * 4 + 3] = 255 }  // top half opaque green
        }
        let data = try JPEGCoder.shared.encode(
            Image(pixels: rgba), as: .jpeg,
            options: ImageEncodeOptions(
                quality: 0.95, chromaSubsampling: .s444, backgroundColor: RGBAColor(red: 255, green: 0, blue: 0)))
        let decoded = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels
        #expect(JPEGSamples.mean(decoded, x: 0..<16, y: 0..<6, channel: 1) > 240)  // green stays
        #expect(JPEGSamples.mean(decoded, x: 0..<16, y: 10..<16, channel: 0) > 240)  // transparent → red background
        #expect(JPEGSamples.mean(decoded, x: 0..<16, y: 10..<16, channel: 1) < 15)
    }

    @Test func maxFileSizeSearchesQuality() throws {
        var state: UInt32 = 3
        let noisy = PixelBuffer(
            width: 128, height: 128, layout: .rgb8,
            bytes: (0..<(128 * 128 * 3)).map { _ in
                state = state &* 1_664_525 &+ 1_013_904_223
                return UInt8(truncatingIfNeeded: state >> 24)
            })
        let image = Image(pixels: noisy)
        let full = try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9))
        let limit = full.count / 3
        let limited = try JPEGCoder.shared.encode(
            image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9, maxFileSize: limit))
        #expect(limited.count <= limit)
        #expect(try JPEGCoder.shared.decode(limited, options: ImageDecodeOptions()).width == 128)
        // Unreachable limit: best effort (quality 1), still a valid JPEG smaller than the original.
        let tiny = try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(maxFileSize: 10))
        #expect(tiny.count < limited.count)
        #expect(try JPEGCoder.shared.decode(tiny, options: ImageDecodeOptions()).width == 128)
        // A limit of 0 bytes (found by the roundtrip fuzz target: the search's log arithmetic went infinite and
        // `Int(_:)` trapped): the same best effort, no trap.
        let zero = try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(maxFileSize: 0))
        #expect(zero.count <= tiny.count)
    }

    @Test func maxPixelSizeDownscalesFirst() throws {
        let data = try JPEGCoder.shared.encode(
            Image(pixels: JPEGSamples.gradient(width: 400, height: 300)), as: .jpeg,
            options: ImageEncodeOptions(maxPixelSize: PixelSize(width: 100, height: 100)))
        let decoded = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(decoded.width == 100 && decoded.height == 75)
    }

    @Test func iccProfileSpanningSeveralChunksRoundTrips() throws {
        let profile = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let data = try JPEGCoder.shared.encode(
            Image(pixels: JPEGSamples.gradient(width: 8, height: 8), metadata: ImageMetadata(iccProfile: profile)),
            as: .jpeg, options: ImageEncodeOptions())
        #expect(try JPEGCoder.shared.decode(data, options: ImageDecodeOptions()).metadata.iccProfile == profile)
    }

    @Test func cmykJPEGIsConvertedToRGB() throws {
        // Adobe-style inverted CMYK written by TurboJPEG: C=0 (full cyan ink), M=Y=K=255 (no ink) shows cyan.
        let cmyk: [UInt8] = Array(repeating: [0, 255, 255, 255], count: 16 * 16).flatMap { $0 }
        let tj = try TurboJPEG.compressor()
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        defer { if let output { tjFree(output) } }
        let status = cmyk.withUnsafeBufferPointer {
            tjCompress2(
                tj.handle, $0.baseAddress, 16, 64, 16, Int32(TJPF_CMYK.rawValue), &output, &size,
                Int32(TJSAMP_444.rawValue), 95, 0)
        }
        #expect(status == 0)
        let data = Data(bytes: try #require(output), count: Int(size))
        #expect(try Self.header(data).isCMYK)
        let image = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.pixels.layout == .rgb8)
        let pixel = Array(image.pixels.pixel(x: 8, y: 8))
        #expect(pixel[0] < 10 && pixel[1] > 245 && pixel[2] > 245, "\(pixel)")
    }

    @Test func refusesOtherFormats() throws {
        #expect(JPEGCoder.shared.canEncode(to: .jpeg) && !JPEGCoder.shared.canEncode(to: .png))
        let error = try #require(throws: ImageError.self) {
            try JPEGCoder.shared.encode(
                Image(pixels: JPEGSamples.gradient(width: 4, height: 4)), as: .png, options: ImageEncodeOptions())
        }
        #expect(error.code == .noCoder)
    }
}
