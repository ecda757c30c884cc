internal import CHEIF
import ColorManagement
import Foundation
import HEIFCoder
import ImageCore
import PNGCoder
import Testing

/// A reference independent of lcms2: Display P3 to sRGB is two 3x3 matrices between the curves (both D65, both
/// the sRGB curve; relative colorimetric, clipped), computed here in Double from the published primaries.
enum MatrixModel {
    typealias Matrix = [[Double]]

    static func rgbToXYZ(_ primaries: [(Double, Double)]) -> Matrix {
        let white = [0.95047, 1.0, 1.08883]
        let columns = primaries.map { [$0.0 / $0.1, 1, (1 - $0.0 - $0.1) / $0.1] }
        let m = (0..<3).map { i in (0..<3).map { j in columns[j][i] } }
        let s = multiply(inverse(m), white)
        return (0..<3).map { i in (0..<3).map { j in m[i][j] * s[j] } }
    }

    static func multiply(_ m: Matrix, _ v: [Double]) -> [Double] {
        (0..<3).map { i in (0..<3).reduce(0) { $0 + m[i][$1] * v[$1] } }
    }

    static func multiply(_ a: Matrix, _ b: Matrix) -> Matrix {
        (0..<3).map { i in (0..<3).map { j in (0..<3).reduce(0) { $0 + a[i][$1] * b[$1][j] } } }
    }

    static func inverse(_ m: Matrix) -> Matrix {
        let (a, b, c) = (m[0][0], m[0][1], m[0][2])
        let (d, e, f) = (m[1][0], m[1][1], m[1][2])
        let (g, h, i) = (m[2][0], m[2][1], m[2][2])
        let det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        return [
            [(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det],
            [(f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det],
            [(d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det],
        ]
    }

    static let p3ToSRGB = multiply(
        inverse(rgbToXYZ([(0.64, 0.33), (0.30, 0.60), (0.15, 0.06)])),
        rgbToXYZ([(0.680, 0.320), (0.265, 0.690), (0.150, 0.060)]))

    /// One P3 colour (components in 0...1) as 8-bit sRGB.
    static func convertP3(_ rgb: [Double]) -> (UInt8, UInt8, UInt8) {
        func linear(_ c: Double) -> Double { c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4) }
        func encoded(_ c: Double) -> UInt8 {
            let v = min(1, max(0, c))
            let e = v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055
            return UInt8((e * 255).rounded())
        }
        let out = multiply(p3ToSRGB, rgb.map(linear))
        return (encoded(out[0]), encoded(out[1]), encoded(out[2]))
    }
}

/// Conversions checked against ``MatrixModel``: 8-bit P3, and 10-bit P3 HEIC, whose samples reach the converter
/// at 16 bits before anything is reduced to 8.
@Suite struct DeepSampleConversionTests {
    @Test func eightBitP3MatchesTheMatrixModel() throws {
        let coders = CodersManager(coders: [PNGCoder.shared])
        let source = try coders.decode(ColorFixtures.data("p3.png"), options: ColorFixtures.options(convert: false))
        let converted = try coders.decode(ColorFixtures.data("p3.png"), options: ColorFixtures.options(convert: true))
        let reference = (0..<source.width * source.height).flatMap { i -> [UInt8] in
            let p = Array(source.pixels.bytes[(i * 3)..<(i * 3 + 3)]).map { Double($0) / 255 }
            let (r, g, b) = MatrixModel.convertP3(p)
            return [r, g, b]
        }
        let (mean, worst) = ColorFixtures.deltaE(converted.pixels, reference: reference)
        print("p3.png: ΔE76 mean \(mean), max \(worst) against the matrix model")
        #expect(mean < 1 && worst < 3)
    }

    @Test func tenBitP3HEICIsConvertedFromItsDeepSamples() throws {
        let (width, height) = (48, 32)
        let file = try HEIFTenBit.write(width: width, height: height, icc: ColorFixtures.bytes("display-p3.icc")) {
            x, y in
            // Saturated ramps: where P3 leaves sRGB and where 10 bits tell apart what 8 bits merge.
            (UInt16(x * 1023 / (width - 1)), UInt16(y * 1023 / (height - 1)), UInt16(1023 - x * 20))
        }
        let samples = try HEIFTenBit.decodeSamples(file)  // what libheif hands any caller, 10-bit
        let reference = samples.flatMap { sample -> [UInt8] in
            let (r, g, b) = MatrixModel.convertP3(sample.map { Double($0) / 1023 })
            return [r, g, b]
        }
        let coders = CodersManager(coders: [HEIFCoder.shared])
        let converted = try coders.decode(file, options: ColorFixtures.options(convert: true))
        #expect(converted.metadata.iccProfile == nil)
        #expect(converted.width == width && converted.height == height)
        let (mean, worst) = ColorFixtures.deltaE(converted.pixels, reference: reference)
        print("10-bit P3 HEIC: ΔE76 mean \(mean), max \(worst) against the matrix model")
        #expect(mean < 1 && worst < 3)
        // Without conversion the profile is carried and the pixels are P3's, far from the reference.
        let untouched = try coders.decode(file, options: ColorFixtures.options(convert: false))
        #expect(untouched.metadata.iccProfile == (try ColorFixtures.bytes("display-p3.icc")))
        #expect(ColorFixtures.deltaE(untouched.pixels, reference: reference).mean > 2)
    }
}

/// 10-bit HEIC written and read with libheif directly (the SDK's own pixels are 8-bit).
enum HEIFTenBit {
    struct Failure: Error { let message: String }

    static func check(_ error: heif_error) throws {
        guard error.code == heif_error_Ok else {
            throw Failure(message: error.message.map { String(cString: $0) } ?? "libheif \(error.code)")
        }
    }

    static func write(
        width: Int, height: Int, icc: [UInt8], _ sample: (Int, Int) -> (UInt16, UInt16, UInt16)
    ) throws -> Data {
        let context = heif_context_alloc()
        defer { heif_context_free(context) }
        var encoder: OpaquePointer?
        try check(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder))
        defer { heif_encoder_release(encoder) }
        try check(heif_encoder_set_lossy_quality(encoder, 100))
        _ = heif_encoder_set_parameter_string(encoder, "chroma", "444")
        var image: OpaquePointer?
        try check(
            heif_image_create(
                Int32(width), Int32(height), heif_colorspace_RGB, heif_chroma_interleaved_RRGGBB_LE, &image))
        defer { heif_image_release(image) }
        try check(heif_image_add_plane(image, heif_channel_interleaved, Int32(width), Int32(height), 10))
        var stride: Int32 = 0
        let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride)!
        for y in 0..<height {
            let row = UnsafeMutableRawPointer(plane + y * Int(stride))
            for x in 0..<width {
                let (r, g, b) = sample(x, y)
                row.storeBytes(of: r.littleEndian, toByteOffset: x * 6, as: UInt16.self)
                row.storeBytes(of: g.littleEndian, toByteOffset: x * 6 + 2, as: UInt16.self)
                row.storeBytes(of: b.littleEndian, toByteOffset: x * 6 + 4, as: UInt16.self)
            }
        }
        try icc.withUnsafeBytes { try check(heif_image_set_raw_color_profile(image, "prof", $0.baseAddress, $0.count)) }
        var handle: OpaquePointer?
        try check(heif_context_encode_image(context, image, encoder, nil, &handle))
        heif_image_handle_release(handle)
        final class Sink { var data = Data() }
        let sink = Sink()
        var writer = heif_writer()
        writer.writer_api_version = 1
        writer.write = { _, bytes, size, user in
            Unmanaged<Sink>.fromOpaque(user!).takeUnretainedValue().data.append(
                bytes!.assumingMemoryBound(to: UInt8.self), count: size)
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: nil)
        }
        try withExtendedLifetime(sink) {
            try check(heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()))
        }
        return sink.data
    }

    /// The primary image's samples as libheif decodes them (interleaved RRGGBB, 10-bit values), pixel by pixel.
    static func decodeSamples(_ file: Data) throws -> [[UInt16]] {
        let context = heif_context_alloc()
        defer { heif_context_free(context) }
        try file.withUnsafeBytes { try check(heif_context_read_from_memory(context, $0.baseAddress, $0.count, nil)) }
        var handle: OpaquePointer?
        try check(heif_context_get_primary_image_handle(context, &handle))
        defer { heif_image_handle_release(handle) }
        var image: OpaquePointer?
        try check(heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RRGGBB_LE, nil))
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        let plane = UnsafeRawPointer(heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride)!)
        return (0..<height).flatMap { y in
            (0..<width).map { x in
                (0..<3).map {
                    UInt16(
                        littleEndian: plane.loadUnaligned(
                            fromByteOffset: y * Int(stride) + x * 6 + $0 * 2, as: UInt16.self))
                }
            }
        }
    }
}
