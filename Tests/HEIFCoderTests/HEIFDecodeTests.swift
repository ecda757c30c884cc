internal import CHEIF
import Foundation
import HEIFCoder
import ImageCore
import ImageTestSupport
import Testing

/// What a decode delivers: transforms, metadata, thumbnails, deep samples, formats.
@Suite struct HEIFDecodeTests {
    /// A 48x32 image whose left half is red and right half blue, so orientation is visible.
    static let halves: PixelBuffer = {
        var bytes = [UInt8](repeating: 0, count: 48 * 32 * 3)
        for y in 0..<32 {
            for x in 0..<48 {
                let i = (y * 48 + x) * 3
                if x < 24 { bytes[i] = 230 } else { bytes[i + 2] = 230 }
                bytes[i + 1] = UInt8(y * 4)
            }
        }
        return PixelBuffer(width: 48, height: 32, layout: .rgb8, bytes: bytes)
    }()

    static func encode(_ pixels: PixelBuffer, metadata: ImageMetadata = ImageMetadata()) throws -> Data {
        try HEIFCoder.shared.encode(
            Image(pixels: pixels, metadata: metadata), as: .heic, options: ImageEncodeOptions(quality: 0.95))
    }

    @Test func aStoredOrientationIsWrittenAsIrotAndAppliedOnDecode() throws {
        // Pixels stored turned: `.right` means "rotate 90° clockwise to show", so the shown image is 32x48.
        let data = try Self.encode(Self.halves, metadata: ImageMetadata(orientation: .right))
        let shown = try HEIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(shown.width == 32 && shown.height == 48)
        #expect(shown.metadata.orientation == .up)
        #expect(shown.metadata.sourceOrientation == .right)
        // Turning the stored pixels clockwise puts the red left half on top.
        #expect(Array(shown.pixels.pixel(x: 16, y: 5))[0] > 180)
        #expect(Array(shown.pixels.pixel(x: 16, y: 42))[2] > 180)

        let raw = try HEIFCoder.shared.decode(data, options: ImageDecodeOptions(applyOrientation: false))
        #expect(raw.width == 48 && raw.height == 32)
        #expect(raw.metadata.orientation == .right)
        #expect(Array(raw.pixels.pixel(x: 5, y: 16))[0] > 180)
    }

    @Test func iccProfileAndEXIFLandInTheMetadata() throws {
        var profile = [UInt8](repeating: 7, count: 300)
        profile.replaceSubrange(0..<4, with: [0, 0, 1, 44])
        profile.replaceSubrange(16..<20, with: Array("RGB ".utf8))
        profile.replaceSubrange(36..<40, with: Array("acsp".utf8))
        let exif: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0, 0, 0, 0]
        let data = try Self.encode(Self.halves, metadata: ImageMetadata(iccProfile: profile, exif: exif))
        let image = try HEIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.metadata.iccProfile == profile)
        #expect(image.metadata.exif == exif)
    }

    @Test func aProfileThatDoesNotFitThePixelsIsNotEmbedded() throws {
        var cmyk = [UInt8](repeating: 0, count: 200)
        cmyk.replaceSubrange(16..<20, with: Array("CMYK".utf8))
        cmyk.replaceSubrange(36..<40, with: Array("acsp".utf8))
        let data = try Self.encode(Self.halves, metadata: ImageMetadata(iccProfile: cmyk))
        #expect(try HEIFCoder.shared.decode(data, options: ImageDecodeOptions()).metadata.iccProfile == nil)
    }

    @Test func aThumbnailIsResampledToFit() throws {
        let data = try Self.encode(Self.halves)
        let image = try HEIFCoder.shared.decode(
            data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 12, height: 12)))
        #expect(image.width == 12 && image.height == 8)
        #expect(image.metadata.sourcePixelWidth == 48)
    }

    @Test func grayPixelsAreWrittenAsRGBAndReadBack() throws {
        let gray = PixelBuffer(
            width: 16, height: 16, layout: .gray8, bytes: (0..<256).map { UInt8(($0 % 16) * 16) })
        let image = try HEIFCoder.shared.decode(try Self.encode(gray), options: ImageDecodeOptions())
        #expect(image.pixels.layout == .rgb8)
        #expect(abs(Int(Array(image.pixels.pixel(x: 15, y: 3))[0]) - 240) <= 12)
    }

    @Test func otherFormatsAreRefused() throws {
        #expect(throws: ImageError.self) {
            try HEIFCoder.shared.encode(Image(pixels: Self.halves), as: .avif, options: ImageEncodeOptions())
        }
        let avifBrand = Data(HEIFFileBuilder.box("ftyp", Array("avif".utf8) + [0, 0, 0, 0] + Array("mif1avif".utf8)))
        #expect(!HEIFCoder.shared.canDecode(avifBrand))
        #expect {
            try HEIFCoder.shared.decode(avifBrand, options: ImageDecodeOptions())
        } throws: { ($0 as? ImageError)?.code == .badImageData }
    }

    @Test func aMif1FileWithAnHEVCItemIsDetectedAsHEIC() {
        var builder = HEIFFileBuilder()
        builder.majorBrand = "mif1"
        builder.brands = ["mif1"]
        builder.items = [HEVCTile.gradient.item(1)]
        #expect(ImageFormat.detect(builder.build()) == .heic)
        builder.items = [HEIFFileBuilder.Item(id: 1, type: "av01", data: [0], properties: [])]
        #expect(ImageFormat.detect(builder.build()) == .heif)
    }

    /// 10-bit samples (written through libheif's own API: the SDK's pixels are 8-bit) come back reduced to 8 bits.
    @Test func tenBitSamplesAreReducedToEightBits() throws {
        let data = try TenBitFile.make(width: 32, height: 16) { x, _ in (UInt16(x * 32), 512, 1023) }
        let image = try HEIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(image.pixels.layout == .rgb8)
        // 1023 is full scale: 255; 512 is about half: 128; x * 32 of 1023 is about x * 8 of 255.
        let pixel = Array(image.pixels.pixel(x: 20, y: 8))
        #expect(abs(Int(pixel[0]) - 160) <= 8)
        #expect(abs(Int(pixel[1]) - 128) <= 8)
        #expect(abs(Int(pixel[2]) - 255) <= 8)
    }
}

/// Writes a 10-bit HEIC with libheif directly (interleaved RRGGBB little-endian in, x265 Main 10 out).
enum TenBitFile {
    static func make(width: Int, height: Int, _ sample: (Int, Int) -> (UInt16, UInt16, UInt16)) throws -> Data {
        let context = heif_context_alloc()
        defer { heif_context_free(context) }
        var encoder: OpaquePointer?
        try check(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder))
        defer { heif_encoder_release(encoder) }
        _ = heif_encoder_set_lossy_quality(encoder, 95)
        var image: OpaquePointer?
        try check(
            heif_image_create(
                Int32(width), Int32(height), heif_colorspace_RGB, heif_chroma_interleaved_RRGGBB_LE, &image))
        defer { heif_image_release(image) }
        try check(heif_image_add_plane(image, heif_channel_interleaved, Int32(width), Int32(height), 10))
        var stride: Int32 = 0
        let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride)!
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = sample(x, y)
                let row = UnsafeMutableRawPointer(plane + y * Int(stride))
                row.storeBytes(of: r.littleEndian, toByteOffset: x * 6, as: UInt16.self)
                row.storeBytes(of: g.littleEndian, toByteOffset: x * 6 + 2, as: UInt16.self)
                row.storeBytes(of: b.littleEndian, toByteOffset: x * 6 + 4, as: UInt16.self)
            }
        }
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

    struct Failure: Error { let message: String }

    static func check(_ error: heif_error) throws {
        guard error.code == heif_error_Ok else {
            throw Failure(message: error.message.map { String(cString: $0) } ?? "\(error.code)")
        }
    }
}
