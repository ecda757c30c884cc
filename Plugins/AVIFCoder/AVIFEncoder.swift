internal import CAVIF
import Foundation
import ImageCore

/// Owns an `avifImage`; destroys it (and its planes) in `deinit`.
final class AVIFImageHandle {
    let image: UnsafeMutablePointer<avifImage>

    init(width: Int, height: Int, format: avifPixelFormat) throws(ImageError) {
        guard let image = avifImageCreate(UInt32(width), UInt32(height), 8, format) else {
            throw AVIFStatus.missing("avifImageCreate failed", stage: .encode)
        }
        self.image = image
    }

    deinit { avifImageDestroy(image) }
}

/// Owns an `avifEncoder`; destroys it in `deinit`. Not thread-safe: one encode call.
final class AVIFEncoderHandle {
    let encoder: UnsafeMutablePointer<avifEncoder>

    init() throws(ImageError) {
        guard let encoder = avifEncoderCreate() else {
            throw AVIFStatus.missing("avifEncoderCreate failed", stage: .encode)
        }
        self.encoder = encoder
    }

    deinit { avifEncoderDestroy(encoder) }

    func check(_ result: avifResult, _ context: String) throws(ImageError) {
        guard result == AVIF_RESULT_OK else {
            throw AVIFStatus.encode(result, diagnostics: encoder.pointee.diag.message, context)
        }
    }
}

/// The settings of one libavif encode, from ``ImageEncodeOptions``.
struct AVIFEncodeSettings: Sendable {
    /// AV1 quantizer 0 (best) ... 63 (worst); 0 with `lossless`.
    var quantizer: Int
    /// Lossless: 4:4:4 with the identity matrix (monochrome: 4:0:0), quantizer 0.
    var lossless: Bool
    /// libavif speed 0 (slowest) ... 10 (fastest).
    var speed: Int
    /// Chroma subsampling of lossy encodes; nil picks 4:2:0 (4:0:0 for gray pixels).
    var subsampling: ChromaSubsampling?
    var maxThreads: Int

    init(_ options: ImageEncodeOptions, quality: Double, maxThreads: Int) {
        let clamped = quality.isFinite ? min(1, max(0, quality)) : 0.85
        quantizer = options.lossless ? 0 : Int(((1 - clamped) * 63).rounded())
        lossless = options.lossless
        switch options.effort {
        case .fast: speed = 10
        case .balanced: speed = 6
        case .best: speed = 3
        }
        subsampling = options.chromaSubsampling
        self.maxThreads = maxThreads
    }
}

/// Encodes ``Image``s to AVIF stills and image sequences with libavif's `avifEncoder`.
///
/// Thread-safe: each call owns its encoder and images.
enum AVIFEncoder {
    static func encode(
        _ image: Image, options: ImageEncodeOptions, maxThreads: Int
    ) throws(ImageError) -> EncodedImage {
        guard AVIFCoder.hasEncoder else {
            throw AVIFStatus.encode(AVIF_RESULT_NO_CODEC_AVAILABLE, diagnostics: "", "cannot encode AVIF")
        }
        var frames: [ImageFrame] = []
        let count = options.firstFrameOnly ? 1 : image.frameCount
        for index in 0..<count {
            do {
                frames.append(try image.frame(at: index))
            } catch {
                throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
            }
        }
        if let box = options.maxPixelSize, box.width > 0, box.height > 0,
            image.width > box.width || image.height > box.height
        {
            let scale = min(Double(box.width) / Double(image.width), Double(box.height) / Double(image.height))
            let width = max(1, Int((Double(image.width) * scale).rounded()))
            let height = max(1, Int((Double(image.height) * scale).rounded()))
            frames = frames.map {
                ImageFrame(pixels: $0.pixels.areaResampled(width: width, height: height), duration: $0.duration)
            }
        }
        func encodeFrames(_ frames: [ImageFrame], quality: Double) throws(ImageError) -> Data {
            try encode(
                frames, metadata: image.metadata,
                settings: AVIFEncodeSettings(options, quality: quality, maxThreads: maxThreads))
        }
        var quality = options.quality
        var best: Data
        var report: PerceptualReport?
        if let target = options.perceptualTarget, !options.lossless, let first = frames.first {
            // Levels are 63 minus the quantizer; an animation's quality is chosen on its first frame, encoded alone.
            // Candidates keep the orientation boxes, so they are decoded as stored to compare with the pixels.
            let raw = ImageDecodeOptions(applyOrientation: false)
            let decoder = AVIFCoder(maxThreads: maxThreads)
            let result = try PerceptualQuality.search(
                target, reference: first.pixels, levels: 0...target.topLevel(of: 0...63, perUnit: 63),
                start: estimate(distance: target.maxDistance),
                logSlope: logDistancePerLevel, quality: { Double($0) / 63 },
                encode: { try encodeFrames([first], quality: Double($0) / 63) },
                decode: { try decoder.decode($0, options: raw).pixels })
            quality = Double(result.level) / 63
            report = result.report
            best = frames.count == 1 ? result.data : try encodeFrames(frames, quality: quality)
        } else {
            best = try encodeFrames(frames, quality: quality)
        }
        guard let limit = options.maxFileSize, !options.lossless, best.count > limit else {
            return EncodedImage(data: best, quality: options.lossless ? nil : quality, perceptual: report)
        }
        var step = quality - 0.1
        while step >= 0 {
            let candidate = try encodeFrames(frames, quality: step)
            if candidate.count < best.count {
                best = candidate
                quality = step
            }
            if candidate.count <= limit { break }
            step -= 0.1
        }
        return EncodedImage(data: best, quality: quality, perceptual: report)
    }

    /// The expected change of log(butteraugli max distance) per level (the corpus photos at 256 and 512 px: about
    /// 4.8 at level 33, 2 at level 50).
    static let logDistancePerLevel = -0.05

    /// The first level to try for a target distance (level 50, quality 0.8, reaches about 2 on the corpus photos at
    /// 256 and 512 px, the median).
    static func estimate(distance: Double) -> Int {
        let steps = (log(distance) - log(2.0)) / logDistancePerLevel
        return max(0, min(63, 50 + Int(steps.rounded())))
    }

    static func encode(
        _ frames: [ImageFrame], metadata: ImageMetadata, settings: AVIFEncodeSettings
    ) throws(ImageError) -> Data {
        let handle = try AVIFEncoderHandle()
        let encoder = handle.encoder
        encoder.pointee.maxThreads = Int32(clamping: settings.maxThreads)
        // libavif 0.11 runs libaom in realtime mode from speed 7, which writes every inter frame of a lossless
        // sequence as a copy of the key frame (tested); lossless sequences therefore encode at speed 6 at most.
        let losslessSequence = settings.lossless && frames.count > 1
        encoder.pointee.speed = Int32(losslessSequence ? min(settings.speed, 6) : settings.speed)
        encoder.pointee.minQuantizer = Int32(settings.quantizer)
        encoder.pointee.maxQuantizer = Int32(settings.quantizer)
        encoder.pointee.minQuantizerAlpha = Int32(settings.quantizer)
        encoder.pointee.maxQuantizerAlpha = Int32(settings.quantizer)
        encoder.pointee.timescale = 1000
        let hasAlpha = frames.contains { hasTranslucentPixels($0.pixels) }
        let isGray = frames.allSatisfy { $0.pixels.layout == .gray8 || $0.pixels.layout == .grayAlpha8 }
        let single = frames.count == 1
        for (index, frame) in frames.enumerated() {
            let picture = try makeImage(
                frame.pixels, alpha: hasAlpha, gray: isGray, metadata: metadata, settings: settings)
            let milliseconds = UInt64(max(1, min(Double(UInt32.max), (frame.duration * 1000).rounded())))
            let flags = single ? AVIF_ADD_IMAGE_FLAG_SINGLE.rawValue : AVIF_ADD_IMAGE_FLAG_NONE.rawValue
            try handle.check(
                avifEncoderAddImage(encoder, picture.image, milliseconds, flags), "cannot encode AVIF frame \(index)")
        }
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        try handle.check(avifEncoderFinish(encoder, &output), "cannot finish the AVIF file")
        guard let bytes = output.data, output.size > 0 else {
            throw AVIFStatus.missing("libavif produced no bytes", stage: .encode)
        }
        return Data(bytes: bytes, count: output.size)
    }

    /// One frame as a YUV `avifImage` through libavif's RGB-to-YUV conversion.
    private static func makeImage(
        _ pixels: PixelBuffer, alpha: Bool, gray: Bool, metadata: ImageMetadata, settings: AVIFEncodeSettings
    ) throws(ImageError) -> AVIFImageHandle {
        guard pixels.width > 0, pixels.height > 0, pixels.width <= 65536, pixels.height <= 65536 else {
            throw ImageError(
                .encodeFailed, stage: .encode, message: "AVIF cannot hold \(pixels.width)x\(pixels.height) pixels")
        }
        let format: avifPixelFormat
        if gray && (settings.subsampling == nil || settings.subsampling == .gray || settings.lossless) {
            format = AVIF_PIXEL_FORMAT_YUV400
        } else if settings.lossless {
            format = AVIF_PIXEL_FORMAT_YUV444
        } else {
            switch settings.subsampling {
            case .s444: format = AVIF_PIXEL_FORMAT_YUV444
            case .s422: format = AVIF_PIXEL_FORMAT_YUV422
            case .gray: format = AVIF_PIXEL_FORMAT_YUV400
            case .s420, nil: format = AVIF_PIXEL_FORMAT_YUV420
            }
        }
        let handle = try AVIFImageHandle(width: pixels.width, height: pixels.height, format: format)
        let image = handle.image
        image.pointee.yuvRange = AVIF_RANGE_FULL
        image.pointee.colorPrimaries = UInt16(AVIF_COLOR_PRIMARIES_BT709)
        image.pointee.transferCharacteristics = UInt16(AVIF_TRANSFER_CHARACTERISTICS_SRGB)
        // Lossless colour needs the identity matrix (RGB stored as is); 4:0:0 only has Y, exact for gray.
        let identity = settings.lossless && format == AVIF_PIXEL_FORMAT_YUV444
        image.pointee.matrixCoefficients = UInt16(
            identity ? AVIF_MATRIX_COEFFICIENTS_IDENTITY : AVIF_MATRIX_COEFFICIENTS_BT601)
        if let icc = metadata.iccProfile(for: gray ? .gray8 : .rgb8) {
            icc.withUnsafeBufferPointer { avifImageSetProfileICC(image, $0.baseAddress, $0.count) }
        }
        if metadata.orientation != .up {
            let properties = AVIFTransforms.properties(for: metadata.orientation)
            if properties.rotation != 0 {
                image.pointee.transformFlags |= UInt32(AVIF_TRANSFORM_IROT.rawValue)
                image.pointee.irot.angle = UInt8(properties.rotation)
            }
            if let mirror = properties.mirror {
                image.pointee.transformFlags |= UInt32(AVIF_TRANSFORM_IMIR.rawValue)
                image.pointee.imir.mode = UInt8(mirror)
            }
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.depth = 8
        rgb.alphaPremultiplied = AVIF_FALSE
        var status = AVIF_RESULT_OK
        if !alpha && pixels.layout == .rgb8 && pixels.bytesPerRow == pixels.width * 3 {
            rgb.format = AVIF_RGB_FORMAT_RGB
            rgb.rowBytes = UInt32(pixels.bytesPerRow)
            pixels.withUnsafeBytes { source in
                rgb.pixels = UnsafeMutablePointer(mutating: source.baseAddress)
                status = avifImageRGBToYUV(image, &rgb)
                rgb.pixels = nil
            }
        } else {
            let rgba = pixels.straightRGBABytes()
            rgb.format = AVIF_RGB_FORMAT_RGBA
            rgb.ignoreAlpha = alpha ? AVIF_FALSE : AVIF_TRUE
            rgb.rowBytes = UInt32(pixels.width * 4)
            rgba.withUnsafeBufferPointer { source in
                rgb.pixels = UnsafeMutablePointer(mutating: source.baseAddress)
                status = avifImageRGBToYUV(image, &rgb)
                rgb.pixels = nil
            }
        }
        guard status == AVIF_RESULT_OK else {
            throw AVIFStatus.encode(status, diagnostics: "", "cannot convert pixels to YUV")
        }
        return handle
    }

    /// True when any pixel is not fully opaque.
    static func hasTranslucentPixels(_ pixels: PixelBuffer) -> Bool {
        guard pixels.layout.hasAlpha else { return false }
        let step = pixels.layout.bytesPerPixel
        return pixels.withUnsafeBytes { bytes in
            for y in 0..<pixels.height {
                var offset = y * pixels.bytesPerRow + step - 1
                for _ in 0..<pixels.width {
                    if bytes[offset] != 255 { return true }
                    offset += step
                }
            }
            return false
        }
    }
}
