internal import CHEIF
import Foundation
import ImageCore

/// One decode of a HEIF file's primary image: the container walk and validation, then libheif.
///
/// Order of work, so that nothing is allocated for an image that will be refused: parse the `meta` item graph
/// (``HEIFItemGraph``), validate it and check the budget from `ispe` and every tile (``HEIFValidator``), then
/// let libheif read the container (without copying the bytes) and decode the primary image to interleaved RGB(A).
/// Thread-safe: every call owns its libheif objects.
enum HEIFDecoder {
    /// The parsed, validated container: what `probe` reports and `decode` starts from.
    static func inspect(
        _ bytes: UnsafeRawBufferPointer, maxPixelCount: Int
    ) throws(ImageError) -> (graph: HEIFItemGraph, primary: HEIFPrimaryImage) {
        let graph = try HEIFItemGraph.parse(bytes)
        let primary = try HEIFValidator(
            graph: graph, reader: HEIFBoxReader(bytes: bytes), maxPixelCount: maxPixelCount
        ).validate()
        return (graph, primary)
    }

    static func decode(
        _ data: Data, options: ImageDecodeOptions, maxThreads: Int, format: ImageFormat
    ) throws -> Image {
        try data.withUnsafeBytes { (bytes) throws(ImageError) -> Image in
            let (graph, primary) = try inspect(bytes, maxPixelCount: options.maxPixelCount)
            try options.checkPixelBudget(width: primary.storedSize.width, height: primary.storedSize.height)
            let context = try HEIFContext(stage: .decode)
            heif_context_set_max_decoding_threads(context.pointer, Int32(maxThreads > 1 ? maxThreads : 0))
            try HEIFStatus.check(
                heif_context_read_from_memory_without_copy(context.pointer, bytes.baseAddress, bytes.count, nil),
                stage: .decode, "HEIF: libheif cannot read the container")
            var raw: OpaquePointer?
            try HEIFStatus.check(
                heif_context_get_primary_image_handle(context.pointer, &raw), stage: .decode,
                "HEIF: no primary image")
            guard let raw else { throw HEIFStatus.missing("no primary image handle", stage: .decode) }
            let handle = HEIFImageHandle(pointer: raw)
            // libheif sizes a grid by its descriptor: the budget holds for what it will allocate too.
            try options.checkPixelBudget(
                width: Int(heif_image_handle_get_width(handle.pointer)),
                height: Int(heif_image_handle_get_height(handle.pointer)))
            let icc = iccProfile(of: handle)
            let wantsWide =
                options.convertToSRGB && icc != nil && ColorConversion.converter != nil
                && heif_image_handle_get_luma_bits_per_pixel(handle.pointer) > 8
            var converted = false
            var pixels: PixelBuffer
            if wantsWide, let converter = ColorConversion.converter {
                let samples = try decodeSamples(handle, options: options, monochrome: graph.isMonochrome(primary.id))
                do {
                    pixels = try converter.convertToSRGB(samples, iccProfile: icc)
                } catch {
                    throw ImageError.wrap(error, as: .badImageData, stage: .decode)
                }
                converted = true
            } else {
                pixels = try decodePixels(handle, options: options)
                if graph.isMonochrome(primary.id) { pixels = pixels.grayFromEqualChannels() }
            }
            let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
            if target.width != pixels.width || target.height != pixels.height {
                pixels = pixels.areaResampled(width: target.width, height: target.height)
            }
            let metadata = ImageMetadata(
                orientation: options.applyOrientation ? .up : primary.orientation,
                sourceOrientation: primary.orientation, iccProfile: converted ? nil : icc, exif: exif(of: handle),
                sourcePixelWidth: primary.storedSize.width, sourcePixelHeight: primary.storedSize.height)
            return Image(pixels: pixels, format: format, metadata: metadata)
        }
    }

    // MARK: Pixels

    private static func decodingOptions(_ options: ImageDecodeOptions, toEightBits: Bool)
        -> UnsafeMutablePointer<heif_decoding_options>?
    {
        let decoding = heif_decoding_options_alloc()
        decoding?.pointee.ignore_transformations = options.applyOrientation ? 0 : 1
        decoding?.pointee.convert_hdr_to_8bit = toEightBits ? 1 : 0
        return decoding
    }

    /// Decodes to 8-bit interleaved RGB or RGBA (libheif reduces deeper samples), alpha as the file has it.
    private static func decodePixels(_ handle: HEIFImageHandle, options: ImageDecodeOptions) throws(ImageError)
        -> PixelBuffer
    {
        let alpha = heif_image_handle_has_alpha_channel(handle.pointer) != 0
        let image = try decodeImage(
            handle, chroma: alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, options: options,
            toEightBits: true)
        let channels = alpha ? 4 : 3
        let premultiplied = alpha && heif_image_handle_is_premultiplied_alpha(handle.pointer) != 0
        // Straight into pooled storage: copyRows writes every byte.
        return try withPlane(image, bytesPerPixel: channels) { width, height, copyRows throws(ImageError) in
            try PixelBuffer(
                validatingWidth: width, height: height, layout: alpha ? .rgba8 : .rgb8,
                alphaMode: alpha ? (premultiplied ? .premultiplied : .straight) : nil, initializingWith: copyRows)
        }
    }

    /// Decodes to 16-bit samples (full range, native order) for a colour conversion before the reduction.
    private static func decodeSamples(
        _ handle: HEIFImageHandle, options: ImageDecodeOptions, monochrome: Bool
    ) throws(ImageError) -> ColorSamples {
        let alpha = heif_image_handle_has_alpha_channel(handle.pointer) != 0
        let image = try decodeImage(
            handle, chroma: alpha ? heif_chroma_interleaved_RRGGBBAA_LE : heif_chroma_interleaved_RRGGBB_LE,
            options: options, toEightBits: false)
        let channels = alpha ? 4 : 3
        let bits = Int(heif_image_get_bits_per_pixel_range(image.pointer, heif_channel_interleaved))
        var (width, height, bytes) = try withPlane(image, bytesPerPixel: channels * 2) { width, height, copyRows in
            (
                width, height,
                [UInt8](unsafeUninitializedCapacity: width * height * channels * 2) { out, initialized in
                    copyRows(out)
                    initialized = out.count
                }
            )
        }
        let maximum = bits > 0 && bits < 16 ? (1 << bits) - 1 : 65535
        if maximum != 65535 {
            bytes.withUnsafeMutableBytes { raw in
                let samples = raw.bindMemory(to: UInt16.self)
                for i in samples.indices {
                    let value = Int(UInt16(littleEndian: samples[i]))
                    samples[i] = UInt16(min(65535, (value * 65535 + maximum / 2) / maximum))
                }
            }
        } else {
            bytes.withUnsafeMutableBytes { raw in
                let samples = raw.bindMemory(to: UInt16.self)
                for i in samples.indices { samples[i] = UInt16(littleEndian: samples[i]) }
            }
        }
        let premultiplied = alpha && heif_image_handle_is_premultiplied_alpha(handle.pointer) != 0
        let rgb = try ColorSamples(
            width: width, height: height, model: .rgb, bitsPerSample: 16, hasAlpha: alpha,
            alphaMode: premultiplied ? .premultiplied : .straight, bytes: bytes)
        return monochrome ? try grayOf(rgb) : rgb
    }

    private static func decodeImage(
        _ handle: HEIFImageHandle, chroma: heif_chroma, options: ImageDecodeOptions, toEightBits: Bool
    ) throws(ImageError) -> HEIFImage {
        let decoding = decodingOptions(options, toEightBits: toEightBits)
        defer { heif_decoding_options_free(decoding) }
        var raw: OpaquePointer?
        try HEIFStatus.check(
            heif_decode_image(handle.pointer, &raw, heif_colorspace_RGB, chroma, decoding), stage: .decode,
            "HEIF: cannot decode the primary image")
        guard let raw else { throw HEIFStatus.missing("heif_decode_image returned no image", stage: .decode) }
        return HEIFImage(pointer: raw)
    }

    /// Runs `body` with the size of `image`'s interleaved plane and a function that copies its rows, packed
    /// (`width × bytesPerPixel` bytes each), into a buffer of exactly that many rows; the plane's memory is reached
    /// only inside `body`.
    private static func withPlane<R>(
        _ image: HEIFImage, bytesPerPixel: Int,
        _ body: (Int, Int, (UnsafeMutableBufferPointer<UInt8>) -> Void) throws(ImageError) -> R
    ) throws(ImageError) -> R {
        let width = Int(heif_image_get_width(image.pointer, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image.pointer, heif_channel_interleaved))
        var stride: Int32 = 0
        guard width > 0, height > 0,
            let plane = heif_image_get_plane_readonly(image.pointer, heif_channel_interleaved, &stride),
            Int(stride) >= width * bytesPerPixel
        else { throw HEIFStatus.missing("the decoded image has no interleaved plane", stage: .decode) }
        let rowBytes = width * bytesPerPixel
        let result = try body(width, height) { out in
            precondition(out.count == rowBytes * height, "HEIF plane copy: buffer of \(out.count) bytes")
            if Int(stride) == rowBytes {
                out.baseAddress!.update(from: plane, count: rowBytes * height)
            } else {
                for y in 0..<height {
                    (out.baseAddress! + y * rowBytes).update(from: plane + y * Int(stride), count: rowBytes)
                }
            }
        }
        withExtendedLifetime(image) {}
        return result
    }

    private static func grayOf(_ rgb: ColorSamples) throws(ImageError) -> ColorSamples {
        let inStep = rgb.hasAlpha ? 4 : 3
        let outStep = rgb.hasAlpha ? 2 : 1
        let count = rgb.width * rgb.height
        var bytes = [UInt8](repeating: 0, count: count * outStep * 2)
        rgb.bytes.withUnsafeBytes { src in
            bytes.withUnsafeMutableBytes { dst in
                let input = src.bindMemory(to: UInt16.self)
                let output = dst.bindMemory(to: UInt16.self)
                for i in 0..<count {
                    output[i * outStep] = input[i * inStep]
                    if rgb.hasAlpha { output[i * outStep + 1] = input[i * inStep + 3] }
                }
            }
        }
        return try ColorSamples(
            width: rgb.width, height: rgb.height, model: .gray, bitsPerSample: 16, hasAlpha: rgb.hasAlpha,
            alphaMode: rgb.alphaMode, bytes: bytes)
    }

    // MARK: Metadata

    /// The ICC profile (`colr` of type `prof` or `rICC`), nil for none or an `nclx` description.
    static func iccProfile(of handle: HEIFImageHandle) -> [UInt8]? {
        let type = heif_image_handle_get_color_profile_type(handle.pointer)
        guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
        let size = heif_image_handle_get_raw_color_profile_size(handle.pointer)
        guard size > 0, size <= 16 << 20 else { return nil }
        var profile = [UInt8](repeating: 0, count: size)
        let error = profile.withUnsafeMutableBytes {
            heif_image_handle_get_raw_color_profile(handle.pointer, $0.baseAddress)
        }
        return error.code == heif_error_Ok ? profile : nil
    }

    /// The first `Exif` block from its TIFF header on (HEIF prefixes it with a 4-byte offset to that header).
    static func exif(of handle: HEIFImageHandle) -> [UInt8]? {
        guard heif_image_handle_get_number_of_metadata_blocks(handle.pointer, "Exif") > 0 else { return nil }
        var id: heif_item_id = 0
        guard heif_image_handle_get_list_of_metadata_block_IDs(handle.pointer, "Exif", &id, 1) == 1 else { return nil }
        let size = heif_image_handle_get_metadata_size(handle.pointer, id)
        guard size > 4, size <= 16 << 20 else { return nil }
        var block = [UInt8](repeating: 0, count: size)
        let error = block.withUnsafeMutableBytes { heif_image_handle_get_metadata(handle.pointer, id, $0.baseAddress) }
        guard error.code == heif_error_Ok else { return nil }
        let offset = Int(block[0]) << 24 | Int(block[1]) << 16 | Int(block[2]) << 8 | Int(block[3])
        guard offset >= 0, offset < size - 4 else { return nil }
        return Array(block[(4 + offset)...])
    }
}
