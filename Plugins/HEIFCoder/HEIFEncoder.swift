internal import CHEIF
import Foundation
import ImageCore

/// Encodes the first frame of an ``Image`` as HEIC (HEVC in HEIF) with libheif's HEVC encoder (x265 in Debian's
/// build), inside one libheif context per call.
///
/// Quality maps to x265's CRF through libheif's 0–100 scale; `lossless` asks for lossless HEVC; `effort` picks
/// the x265 preset (`.fast` ultrafast, `.balanced` fast, `.best` slower); `chromaSubsampling` picks 4:4:4, 4:2:2
/// or 4:2:0 (the default). Alpha is written as an auxiliary
/// image; gray is written as RGB; premultiplied colour is straightened. The ICC profile is embedded (`colr` of
/// type `prof`) when it fits the pixels, the EXIF block is kept, and pixels kept in a stored orientation get the
/// matching `irot`/`imir`. `maxPixelSize` downsizes first; `maxFileSize` lowers the quality step by step and
/// returns the smallest result when nothing fits.
enum HEIFEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws(ImageError) -> Data {
        guard HEIFCoder.canEncodeHEIC else {
            throw ImageError(
                .encodeFailed, stage: .encode, message: "this libheif has no HEVC encoder",
                underlying: HEIFLibError(code: -1, subcode: 0, message: "no heif_compression_HEVC encoder"))
        }
        var pixels = image.pixels
        guard pixels.width > 0, pixels.height > 0 else {
            throw ImageError(.encodeFailed, stage: .encode, message: "HEIF: cannot encode an empty image")
        }
        if let limit = options.maxPixelSize, limit.width > 0, limit.height > 0,
            pixels.width > limit.width || pixels.height > limit.height
        {
            let scale = min(Double(limit.width) / Double(pixels.width), Double(limit.height) / Double(pixels.height))
            pixels = pixels.areaResampled(
                width: max(1, Int((Double(pixels.width) * scale).rounded())),
                height: max(1, Int((Double(pixels.height) * scale).rounded())))
        }
        let alpha = pixels.layout.hasAlpha
        let interleaved = alpha ? pixels.straightRGBABytes() : rgbBytes(pixels)
        // The profile is checked against the layout written (gray is written as RGB).
        let icc = image.metadata.iccProfile(for: alpha ? .rgba8 : .rgb8)
        var quality = options.quality
        var smallest: Data?
        while true {
            let data = try encodeOnce(
                interleaved, width: pixels.width, height: pixels.height, alpha: alpha, quality: quality,
                options: options, icc: icc, metadata: image.metadata)
            if smallest.map({ data.count < $0.count }) ?? true { smallest = data }
            guard let limit = options.maxFileSize, !options.lossless, data.count > limit, quality > 0.1 else {
                break
            }
            quality = max(0.05, quality - 0.15)
        }
        return smallest!
    }

    private static func encodeOnce(
        _ interleaved: [UInt8], width: Int, height: Int, alpha: Bool, quality: Double, options: ImageEncodeOptions,
        icc: [UInt8]?, metadata: ImageMetadata
    ) throws(ImageError) -> Data {
        let context = try HEIFContext(stage: .encode)
        var rawEncoder: OpaquePointer?
        try HEIFStatus.check(
            heif_context_get_encoder_for_format(context.pointer, heif_compression_HEVC, &rawEncoder), stage: .encode,
            "HEIF: no HEVC encoder")
        guard let encoder = rawEncoder else { throw HEIFStatus.missing("no HEVC encoder", stage: .encode) }
        defer { heif_encoder_release(encoder) }
        if options.lossless {
            try HEIFStatus.check(heif_encoder_set_lossless(encoder, 1), stage: .encode, "HEIF: lossless")
        } else {
            try HEIFStatus.check(
                heif_encoder_set_lossy_quality(encoder, Int32((quality * 100).rounded())), stage: .encode,
                "HEIF: quality")
        }
        let preset =
            switch options.effort {
            case .fast: "ultrafast"
            case .balanced: "fast"
            case .best: "slower"
            }
        // Only x265 has presets and a chroma parameter; another HEVC encoder keeps its own defaults.
        _ = heif_encoder_set_parameter_string(encoder, "preset", preset)
        let chroma =
            switch options.chromaSubsampling {
            case .s444: "444"
            case .s422: "422"
            default: "420"
            }
        _ = heif_encoder_set_parameter_string(encoder, "chroma", chroma)

        var rawImage: OpaquePointer?
        try HEIFStatus.check(
            heif_image_create(
                Int32(width), Int32(height), heif_colorspace_RGB,
                alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &rawImage), stage: .encode,
            "HEIF: cannot create the image")
        guard let rawImage else { throw HEIFStatus.missing("heif_image_create", stage: .encode) }
        let image = HEIFImage(pointer: rawImage)
        try HEIFStatus.check(
            heif_image_add_plane(image.pointer, heif_channel_interleaved, Int32(width), Int32(height), 8),
            stage: .encode, "HEIF: cannot add the pixel plane")
        var stride: Int32 = 0
        let rowBytes = width * (alpha ? 4 : 3)
        guard let plane = heif_image_get_plane(image.pointer, heif_channel_interleaved, &stride),
            Int(stride) >= rowBytes
        else { throw HEIFStatus.missing("the pixel plane", stage: .encode) }
        interleaved.withUnsafeBufferPointer { source in
            for y in 0..<height {
                (plane + y * Int(stride)).update(from: source.baseAddress! + y * rowBytes, count: rowBytes)
            }
        }
        if let icc {
            try HEIFStatus.check(
                icc.withUnsafeBytes {
                    heif_image_set_raw_color_profile(image.pointer, "prof", $0.baseAddress, $0.count)
                },
                stage: .encode, "HEIF: cannot set the ICC profile")
        }
        let encoding = heif_encoding_options_alloc()
        defer { heif_encoding_options_free(encoding) }
        if let encoding, metadata.orientation != .up {
            // heif_orientation numbers its cases as EXIF does (1 normal … 8 rotate 270° clockwise).
            encoding.pointee.image_orientation = heif_orientation(rawValue: UInt32(metadata.orientation.rawValue))
        }
        var rawHandle: OpaquePointer?
        try HEIFStatus.check(
            heif_context_encode_image(context.pointer, image.pointer, encoder, encoding, &rawHandle), stage: .encode,
            "HEIF: cannot encode the image")
        guard let rawHandle else { throw HEIFStatus.missing("heif_context_encode_image", stage: .encode) }
        let handle = HEIFImageHandle(pointer: rawHandle)
        if let exif = metadata.exif, !exif.isEmpty {
            try HEIFStatus.check(
                exif.withUnsafeBytes {
                    heif_context_add_exif_metadata(context.pointer, handle.pointer, $0.baseAddress, Int32($0.count))
                }, stage: .encode, "HEIF: cannot add the EXIF block")
        }
        return try write(context)
    }

    /// Writes the context's file into memory through a `heif_writer` callback (no Swift frame is unwound: the
    /// callback only appends and returns a status).
    private static func write(_ context: HEIFContext) throws(ImageError) -> Data {
        final class Sink { var data = Data() }
        let sink = Sink()
        var writer = heif_writer()
        writer.writer_api_version = 1
        writer.write = { _, bytes, size, userdata in
            if let userdata, let bytes {
                Unmanaged<Sink>.fromOpaque(userdata).takeUnretainedValue().data.append(
                    bytes.assumingMemoryBound(to: UInt8.self), count: size)
            }
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: HEIFEncoder.success)
        }
        let status = withExtendedLifetime(sink) {
            heif_context_write(context.pointer, &writer, Unmanaged.passUnretained(sink).toOpaque())
        }
        try HEIFStatus.check(status, stage: .encode, "HEIF: cannot write the file")
        return sink.data
    }

    /// The message libheif wants with an OK status (a static C string).
    nonisolated(unsafe) static let success: UnsafePointer<CChar> = UnsafeRawPointer(
        ("Success" as StaticString).utf8Start
    ).assumingMemoryBound(to: CChar.self)

    /// Tightly packed RGB of an opaque buffer (gray expanded).
    private static func rgbBytes(_ pixels: PixelBuffer) -> [UInt8] {
        if pixels.layout == .rgb8, pixels.bytesPerRow == pixels.width * 3 { return Array(pixels.bytes) }
        let rgba = pixels.straightRGBABytes()
        var rgb = [UInt8](repeating: 0, count: pixels.width * pixels.height * 3)
        for i in 0..<pixels.width * pixels.height {
            rgb[i * 3] = rgba[i * 4]
            rgb[i * 3 + 1] = rgba[i * 4 + 1]
            rgb[i * 3 + 2] = rgba[i * 4 + 2]
        }
        return rgb
    }
}
