internal import CJXL
import Foundation
import ImageCore

/// Owns a `JxlEncoder` and its thread runner; destroys both in `deinit`. Not thread-safe: one encode call.
final class JXLEncoderHandle {
    let encoder: OpaquePointer
    private var runner: UnsafeMutableRawPointer?

    init(maxThreads: Int) throws(ImageError) {
        guard let encoder = JxlEncoderCreate(nil) else {
            throw JXLStatus.encode(JXL_ENC_ERROR, error: JXL_ENC_ERR_OOM, "JxlEncoderCreate failed")
        }
        self.encoder = encoder
        if maxThreads > 1, let runner = JxlThreadParallelRunnerCreate(nil, maxThreads) {
            self.runner = runner
            _ = JxlEncoderSetParallelRunner(encoder, JxlThreadParallelRunner, runner)
        }
    }

    deinit {
        JxlEncoderDestroy(encoder)
        if let runner { JxlThreadParallelRunnerDestroy(runner) }
    }

    /// Throws `encodeFailed` with libjxl's error code when `status` is not success.
    func check(_ status: JxlEncoderStatus, _ context: String) throws(ImageError) {
        guard status == JXL_ENC_SUCCESS else {
            throw JXLStatus.encode(status, error: JxlEncoderGetError(encoder), context)
        }
    }
}

/// Encodes ``Image``s to JPEG XL stills and animations with libjxl's encoder.
///
/// Lossless keeps the pixels exactly (`uses_original_profile`, modular); lossy uses the butteraugli distance
/// `cjxl` derives from a quality (0.1 + (100 − q) × 0.09 from q 30 up, a steeper curve below), or a
/// ``ImageEncodeOptions/perceptualTarget``'s distance itself (one encode; libjxl's distance bounds a norm of the
/// butteraugli error, not its maximum, so the max-norm target is aimed at, not measured); `maxFileSize` lowers
/// the quality step by step and returns the smallest result when nothing fits. All frames share one layout (the
/// narrowest that holds every frame); alpha is written straight (premultiplied pixels are divided out first). The ICC profile in the metadata is written when libjxl accepts it (else the
/// pixels are declared sRGB), the orientation of pixels kept in a stored orientation is written into the
/// codestream. Thread-safe: each call owns its encoder.
enum JXLEncoder {
    static func encode(
        _ image: Image, options: ImageEncodeOptions, maxThreads: Int
    ) throws(ImageError) -> EncodedImage {
        let count = options.firstFrameOnly ? 1 : try image.framesWithinBudget(stage: .encode)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(count)
        for index in 0..<count {
            do {
                frames.append(try image.frame(at: index))
            } catch {
                throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
            }
        }
        frames = resized(frames, inside: options.maxPixelSize)
        frames = unified(frames)
        // A perceptual target is JPEG XL's own distance: one encode, no search (the encoder aims at it itself).
        let target = options.lossless ? nil : options.perceptualTarget
        var quality = target.map { Self.quality(distance: $0.maxDistance) } ?? options.quality
        var best = try encode(
            frames, image: image, options: options,
            distance: target.map { Self.clamped($0.maxDistance) }
                ?? distance(quality: quality), maxThreads: maxThreads)
        var encodes = 1
        if let limit = options.maxFileSize, !options.lossless, best.count > limit {
            var step = quality - 0.1
            while step >= 0 {
                let candidate = try encode(
                    frames, image: image, options: options, distance: distance(quality: step), maxThreads: maxThreads)
                encodes += 1
                if candidate.count < best.count {
                    best = candidate
                    quality = step
                }
                if candidate.count <= limit { break }
                step -= 0.1
            }
        }
        let report = target.map {
            PerceptualReport(target: $0, metric: "jxl-distance", quality: quality, distance: nil, encodes: encodes)
        }
        return EncodedImage(data: best, quality: options.lossless ? nil : quality, perceptual: report)
    }

    /// A distance libjxl accepts for a lossy encode: 0.1...25.
    static func clamped(_ distance: Double) -> Float { Float(min(25, max(0.1, distance))) }

    /// The quality 0...1 whose ``distance(quality:)`` is `distance` (the inverse of `cjxl`'s mapping), for reports.
    static func quality(distance: Double) -> Double {
        let d = Double(clamped(distance))
        // 0.1 + (100 − q) × 0.09 from q 30 (distance 6.4) up; below, the smaller root of the quadratic.
        let q =
            d <= 6.4
            ? 100 - (d - 0.1) / 0.09
            : (1.15 - (1.15 * 1.15 - 4 * 53.0 / 3000.0 * (25 - d)).squareRoot()) / (2 * 53.0 / 3000.0)
        return min(1, max(0, q / 100))
    }

    /// `cjxl`'s quality-to-distance mapping (quality 0...100; 100 is distance 0, lossless in modular mode).
    static func distance(quality: Double) -> Float {
        let q = min(100, max(0, quality * 100))
        let distance = q >= 30 ? 0.1 + (100 - q) * 0.09 : 53.0 / 3000.0 * q * q - 23.0 / 20.0 * q + 25.0
        // Lossy encodes need a positive distance; libjxl accepts at most 25.
        return Float(min(25, max(0.1, distance)))
    }

    /// libjxl's effort for an ``EncodeEffort`` (its default is 7).
    static func effort(_ effort: EncodeEffort) -> Int64 {
        switch effort {
        case .fast: 3
        case .balanced: 7
        case .best: 9
        }
    }

    private static func encode(
        _ frames: [ImageFrame], image: Image, options: ImageEncodeOptions, distance: Float, maxThreads: Int
    ) throws(ImageError) -> Data {
        guard let first = frames.first?.pixels, first.width > 0, first.height > 0 else {
            throw ImageError(.encodeFailed, stage: .encode, message: "JPEG XL: cannot encode an empty image")
        }
        let handle = try JXLEncoderHandle(maxThreads: maxThreads)
        let encoder = handle.encoder
        let layout = first.layout
        let animated = frames.count > 1
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(first.width)
        info.ysize = UInt32(first.height)
        info.bits_per_sample = 8
        info.exponent_bits_per_sample = 0
        info.num_color_channels = layout == .gray8 || layout == .grayAlpha8 ? 1 : 3
        info.alpha_bits = layout.hasAlpha ? 8 : 0
        info.num_extra_channels = layout.hasAlpha ? 1 : 0
        // Straight alpha only: libjxl 0.7 traps (JXL_CHECK) when the basic info and the alpha channel disagree on
        // premultiplication, so premultiplied pixels are straightened first (``unified(_:)``).
        info.alpha_premultiplied = 0
        info.uses_original_profile = options.lossless ? 1 : 0
        info.orientation = JxlOrientation(UInt32(image.metadata.orientation.rawValue))
        if animated {
            info.have_animation = 1
            info.animation.tps_numerator = 1000
            info.animation.tps_denominator = 1
            info.animation.num_loops = UInt32(clamping: max(0, image.loopCount))
        }
        try handle.check(JxlEncoderSetBasicInfo(encoder, &info), "cannot set the image header")
        try setColor(handle, icc: image.metadata.iccProfile, gray: info.num_color_channels == 1)
        guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw JXLStatus.encode(JXL_ENC_ERROR, error: JxlEncoderGetError(encoder), "no frame settings")
        }
        try handle.check(
            JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, effort(options.effort)),
            "cannot set the effort")
        if options.lossless {
            try handle.check(JxlEncoderSetFrameLossless(settings, 1), "cannot ask for lossless")
        } else {
            try handle.check(
                JxlEncoderSetFrameDistance(settings, distance), "cannot set the distance")
        }
        var format = JxlPixelFormat(
            num_channels: UInt32(layout.bytesPerPixel), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN,
            align: 0)
        for (index, frame) in frames.enumerated() {
            if animated {
                var header = JxlFrameHeader()
                JxlEncoderInitFrameHeader(&header)
                // At least one tick: a JPEG XL frame of duration 0 is a layer of the next frame, not a frame.
                header.duration = UInt32(max(1, min(Double(UInt32.max), (frame.duration * 1000).rounded())))
                try handle.check(JxlEncoderSetFrameHeader(settings, &header), "cannot set frame \(index)'s header")
            }
            let pixels = tight(frame.pixels)
            let status = pixels.withUnsafeBytes { raw in
                JxlEncoderAddImageFrame(settings, &format, raw.baseAddress, raw.count)
            }
            try handle.check(status, "cannot encode frame \(index)")
        }
        JxlEncoderCloseInput(encoder)
        return try drain(handle)
    }

    /// The ICC profile when libjxl accepts it, else sRGB (gray with the sRGB curve for gray pixels).
    private static func setColor(_ handle: JXLEncoderHandle, icc: [UInt8]?, gray: Bool) throws(ImageError) {
        if let icc, !icc.isEmpty {
            let status = icc.withUnsafeBufferPointer {
                JxlEncoderSetICCProfile(handle.encoder, $0.baseAddress, $0.count)
            }
            if status == JXL_ENC_SUCCESS { return }
        }
        var srgb = JxlColorEncoding()
        JxlColorEncodingSetToSRGB(&srgb, gray ? 1 : 0)
        try handle.check(JxlEncoderSetColorEncoding(handle.encoder, &srgb), "cannot set the colour encoding")
    }

    /// Collects the encoder's output, growing the buffer while libjxl asks for more.
    private static func drain(_ handle: JXLEncoderHandle) throws(ImageError) -> Data {
        var output = [UInt8](repeating: 0, count: 64 * 1024)
        var written = 0
        while true {
            var status = JXL_ENC_ERROR
            output.withUnsafeMutableBufferPointer { buffer in
                var next: UnsafeMutablePointer<UInt8>? = buffer.baseAddress! + written
                var available = buffer.count - written
                status = JxlEncoderProcessOutput(handle.encoder, &next, &available)
                written = buffer.count - available
            }
            if status == JXL_ENC_NEED_MORE_OUTPUT {
                output.append(contentsOf: repeatElement(0, count: output.count))
                continue
            }
            try handle.check(status, "cannot write the file")
            return Data(output.prefix(written))
        }
    }

    /// Frames fitted inside `limit` (aspect ratio kept, never enlarged).
    private static func resized(_ frames: [ImageFrame], inside limit: PixelSize?) -> [ImageFrame] {
        guard let limit, limit.width > 0, limit.height > 0, let first = frames.first?.pixels,
            first.width > limit.width || first.height > limit.height
        else { return frames }
        let scale = min(Double(limit.width) / Double(first.width), Double(limit.height) / Double(first.height))
        let width = max(1, Int((Double(first.width) * scale).rounded()))
        let height = max(1, Int((Double(first.height) * scale).rounded()))
        return frames.map {
            ImageFrame(pixels: $0.pixels.areaResampled(width: width, height: height), duration: $0.duration)
        }
    }

    /// Frames in one layout with straight alpha: unchanged when they already are, else straight RGBA (or gray and
    /// alpha when every frame is).
    private static func unified(_ frames: [ImageFrame]) -> [ImageFrame] {
        guard let first = frames.first?.pixels else { return frames }
        let agree = frames.allSatisfy { $0.pixels.layout == first.layout && $0.pixels.alphaMode != .premultiplied }
        if agree { return frames }
        if frames.allSatisfy({ $0.pixels.layout == .grayAlpha8 }) {
            return frames.map { ImageFrame(pixels: straightGrayAlpha($0.pixels), duration: $0.duration) }
        }
        return frames.map { frame in
            let pixels = frame.pixels
            return ImageFrame(
                pixels: PixelBuffer(
                    width: pixels.width, height: pixels.height, layout: .rgba8, alphaMode: .straight,
                    bytes: pixels.straightRGBABytes()),
                duration: frame.duration)
        }
    }

    /// Gray and alpha with the gray divided by alpha (for premultiplied input).
    private static func straightGrayAlpha(_ pixels: PixelBuffer) -> PixelBuffer {
        guard pixels.alphaMode == .premultiplied else { return pixels }
        var bytes = [UInt8](repeating: 0, count: pixels.width * pixels.height * 2)
        pixels.withUnsafeBytes { source in
            for y in 0..<pixels.height {
                for x in 0..<pixels.width {
                    let s = y * pixels.bytesPerRow + x * 2
                    let alpha = Int(source[s + 1])
                    let gray = Int(source[s])
                    bytes[(y * pixels.width + x) * 2] =
                        alpha == 0 ? 0 : UInt8(min(255, (gray * 255 + alpha / 2) / alpha))
                    bytes[(y * pixels.width + x) * 2 + 1] = UInt8(alpha)
                }
            }
        }
        return PixelBuffer(
            width: pixels.width, height: pixels.height, layout: .grayAlpha8, alphaMode: .straight, bytes: bytes)
    }

    /// The pixel bytes without row padding, as libjxl reads them.
    private static func tight(_ pixels: PixelBuffer) -> [UInt8] {
        let row = pixels.width * pixels.layout.bytesPerPixel
        return pixels.withUnsafeBytes { source in
            if pixels.bytesPerRow == row && source.count == row * pixels.height { return Array(source) }
            var out: [UInt8] = []
            out.reserveCapacity(row * pixels.height)
            for y in 0..<pixels.height {
                out.append(contentsOf: source[y * pixels.bytesPerRow..<y * pixels.bytesPerRow + row])
            }
            return out
        }
    }
}
