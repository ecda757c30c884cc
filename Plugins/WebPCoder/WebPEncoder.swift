internal import CWebP
import Foundation
import ImageCore

/// Owns a `WebPAnimEncoder`; deletes it in `deinit`. Not thread-safe: one encode call.
final class WebPAnimEncoderHandle {
    let encoder: OpaquePointer

    init(size: PixelSize, loopCount: Int) throws(ImageError) {
        var options = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&options) != 0 else { throw WebPErrors.encode("libwebp version mismatch") }
        options.anim_params.loop_count = Int32(min(max(loopCount, 0), 0xFFFF))
        guard let encoder = WebPAnimEncoderNew(Int32(size.width), Int32(size.height), &options) else {
            throw WebPErrors.encode("cannot create animation encoder for \(size)")
        }
        self.encoder = encoder
    }

    deinit { WebPAnimEncoderDelete(encoder) }

    /// The encoder's last error text.
    var lastError: String {
        WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "unknown animation encoder error"
    }
}

/// One frame's pixels at their own size, in a layout libwebp imports (``WebPPixels/importable(_:)``).
struct WebPSourceFrame {
    var pixels: PixelBuffer
    var hasAlpha: Bool
    var duration: Double
}

/// Encodes still and animated WebP: lossy (`WebPConfig` quality), lossless (exact, keeping the colour under
/// transparent pixels), effort → `method`, `maxPixelSize` through libwebp's rescaler (an area average first when a
/// perceptual target measures the output), `perceptualTarget` by ``PerceptualQuality``'s search, and `maxFileSize`
/// by ``QualitySearch`` on the lossy quality.
enum WebPEncoder {
    /// WebP stores each side in 14 bits.
    static let maximumDimension = 16383
    /// ANMF stores each frame's duration in 24 bits of milliseconds.
    static let maximumFrameMilliseconds = 0xFF_FFFF

    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> EncodedImage {
        let source = PixelSize(width: image.width, height: image.height)
        let target = options.maxPixelSize.map { WebPPixels.fit(source, inside: $0) } ?? source
        try checkEncodable(target, what: "image")
        // Every frame is converted and held for the encoder: the whole animation must fit its budget first.
        let count =
            options.firstFrameOnly
            ? 1 : try image.framesWithinBudget(outputPixelsPerFrame: target.width * target.height, stage: .encode)
        let perceptual = options.lossless ? nil : options.perceptualTarget
        var frames: [WebPSourceFrame] = []
        // A perceptual target measures what is encoded: the first frame at the output size (an area average, as the
        // other encoders resize, instead of libwebp's rescaler), which a still then encodes as it is.
        var reference: PixelBuffer?
        for index in 0..<count {
            let frame = try image.frame(at: index)
            var pixels = frame.pixels
            if index == 0, perceptual != nil {
                if pixels.width != target.width || pixels.height != target.height {
                    pixels = pixels.areaResampled(width: target.width, height: target.height)
                }
                reference = pixels
            }
            // Each frame is imported at its own size (a provider may return another size) and rescaled to target.
            try checkEncodable(PixelSize(width: pixels.width, height: pixels.height), what: "frame \(index)")
            let importable = WebPPixels.importable(pixels)
            frames.append(
                WebPSourceFrame(pixels: importable.pixels, hasAlpha: importable.hasAlpha, duration: frame.duration))
        }
        let hasAlpha = frames.contains { $0.hasAlpha }
        let profile = image.metadata.iccProfile(for: .rgba8)  // pixels that aren't sRGB keep their profile
        func still(_ frame: WebPSourceFrame, quality: Float) throws(ImageError) -> [UInt8] {
            let config = try makeConfig(quality: quality, options: options)
            return try WebPICCProfile.embedding(
                profile,
                in: encodeStill(frame.pixels, target: target, hasAlpha: hasAlpha, config: config))
        }
        func attempt(quality: Float) throws(ImageError) -> [UInt8] {
            if frames.count == 1 { return try still(frames[0], quality: quality) }
            let config = try makeConfig(quality: quality, options: options)
            return try WebPICCProfile.embedding(
                profile, in: encodeAnimation(frames, target: target, loopCount: image.loopCount, config: config))
        }
        var level: Int
        var best: [UInt8]
        var report: PerceptualReport?
        if let perceptual, let reference {
            // An animation's quality is chosen on its first frame, encoded alone; the animation is encoded once after.
            let result = try PerceptualQuality.search(
                perceptual, reference: reference, levels: 0...perceptual.topLevel(of: 0...100, perUnit: 100),
                start: estimate(distance: perceptual.maxDistance),
                logSlope: logDistancePerLevel, quality: { Double($0) / 100 },
                encode: { Data(try still(frames[0], quality: Float($0))) },
                decode: { try WebPCoder.shared.decode($0, options: ImageDecodeOptions()).pixels })
            level = result.level
            report = result.report
            best = frames.count == 1 ? [UInt8](result.data) : try attempt(quality: Float(level))
        } else {
            let quality = Float(min(max(options.quality, 0), 1) * 100)
            level = Int(quality.rounded(.down))
            best = try attempt(quality: quality)
        }
        let encodedQuality = options.lossless ? nil : Double(level) / 100
        guard let limit = options.maxFileSize, best.count > limit, !options.lossless, level > 0 else {
            return EncodedImage(data: Data(best), quality: encodedQuality, perceptual: report)
        }
        // The highest integer quality below the requested (or chosen) one whose output fits; the smallest if none.
        let outcome = try QualitySearch.highestPassing(
            levels: 0...(level - 1), start: level - 1, threshold: Double(limit), logSlope: logBytesPerLevel,
            known: [QualitySearch.Probe(level: level, value: Double(best.count), payload: best)]
        ) { (quality: Int) throws(ImageError) -> (value: Double, payload: [UInt8]) in
            let output = try attempt(quality: Float(quality))
            return (Double(output.count), output)
        }
        if let chosen = outcome.best ?? outcome.probes.min(by: { $0.value < $1.value }),
            chosen.payload.count < best.count
        {
            (level, best) = (chosen.level, chosen.payload)
        }
        return EncodedImage(data: Data(best), quality: Double(level) / 100, perceptual: report)
    }

    /// The expected change of log(butteraugli max distance) per quality step.
    static let logDistancePerLevel = -0.016
    /// The expected change of log(size) per quality step.
    static let logBytesPerLevel = 0.02

    /// The first quality to try for a target distance (q 80 reaches about 3.0 on the corpus photos at 256 and 512
    /// px, the median).
    static func estimate(distance: Double) -> Int {
        let steps = (log(distance) - log(3.0)) / logDistancePerLevel
        return max(0, min(100, 80 + Int(steps.rounded())))
    }

    private static func makeConfig(quality: Float, options: ImageEncodeOptions) throws(ImageError) -> WebPConfig {
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else {
            throw WebPErrors.encode(VP8_ENC_ERROR_INVALID_CONFIGURATION, "libwebp version mismatch")
        }
        config.method =
            switch options.effort {
            case .fast: options.lossless ? 0 : 2
            case .balanced: 4
            case .best: 6
            }
        if options.lossless {
            config.lossless = 1
            config.exact = 1
            // For lossless, quality is compression effort.
            config.quality =
                switch options.effort {
                case .fast: 25
                case .balanced: 75
                case .best: 100
                }
        } else {
            config.quality = quality
        }
        guard WebPValidateConfig(&config) != 0 else {
            throw WebPErrors.encode(VP8_ENC_ERROR_INVALID_CONFIGURATION, "invalid WebP configuration")
        }
        return config
    }

    private static func makePicture(
        _ pixels: PixelBuffer, target: PixelSize, hasAlpha: Bool, config: WebPConfig
    ) throws(ImageError) -> WebPPictureHandle {
        let picture = try WebPPictureHandle(pixels: pixels, hasAlpha: hasAlpha, useARGB: config.lossless != 0)
        try picture.rescale(to: target)
        return picture
    }

    private static func encodeStill(
        _ pixels: PixelBuffer, target: PixelSize, hasAlpha: Bool, config: WebPConfig
    ) throws(ImageError) -> [UInt8] {
        let picture = try makePicture(pixels, target: target, hasAlpha: hasAlpha, config: config)
        let writer = UnsafeMutablePointer<WebPMemoryWriter>.allocate(capacity: 1)
        writer.initialize(to: WebPMemoryWriter())
        WebPMemoryWriterInit(writer)
        defer {
            WebPMemoryWriterClear(writer)
            writer.deallocate()
        }
        picture.picture.pointee.writer = WebPMemoryWrite
        picture.picture.pointee.custom_ptr = UnsafeMutableRawPointer(writer)
        var config = config
        guard WebPEncode(&config, picture.picture) != 0 else {
            throw WebPErrors.encode(picture.picture.pointee.error_code, "cannot encode WebP")
        }
        guard let memory = writer.pointee.mem else { throw WebPErrors.encode("encoder produced no bytes") }
        return Array(UnsafeBufferPointer(start: memory, count: writer.pointee.size))
    }

    /// Throws `encodeFailed` for a size WebP cannot store (checked before any conversion to 32-bit integers).
    static func checkEncodable(_ size: PixelSize, what: String) throws(ImageError) {
        guard size.width > 0, size.height > 0, size.width <= maximumDimension, size.height <= maximumDimension else {
            throw WebPErrors.encode("WebP cannot store \(what) of \(size) (sides 1...\(maximumDimension))")
        }
    }

    /// The animation timestamps (ms, 32-bit in libwebp) of frames with `durations` (seconds), plus the end time.
    ///
    /// Each frame lasts 1 ms to 16,777,215 ms (ANMF's 24 bits); a total past `Int32.max` ms (24.8 days) is
    /// `encodeFailed`, not a trap.
    static func timestamps(_ durations: [Double]) throws(ImageError) -> [Int32] {
        var result: [Int32] = [0]
        var now: Int32 = 0
        for duration in durations {
            // ImageFrame keeps durations finite and at most a day, so this conversion cannot trap; ANMF stores a
            // frame's duration in 24 bits, so longer frames are clamped to 16,777,215 ms (4.66 hours).
            let milliseconds = Int32(min(max(1, Int((duration * 1000).rounded())), maximumFrameMilliseconds))
            let (next, overflow) = now.addingReportingOverflow(milliseconds)
            guard !overflow else {
                throw WebPErrors.encode("the animation lasts longer than \(Int32.max) ms")
            }
            now = next
            result.append(now)
        }
        return result
    }

    private static func encodeAnimation(
        _ frames: [WebPSourceFrame], target: PixelSize, loopCount: Int, config: WebPConfig
    ) throws(ImageError) -> [UInt8] {
        let times = try timestamps(frames.map(\.duration))
        let encoder = try WebPAnimEncoderHandle(size: target, loopCount: loopCount)
        var config = config
        for (index, frame) in frames.enumerated() {
            let picture = try makePicture(frame.pixels, target: target, hasAlpha: true, config: config)
            guard WebPAnimEncoderAdd(encoder.encoder, picture.picture, times[index], &config) != 0 else {
                throw WebPErrors.encode("cannot add animation frame: \(encoder.lastError)")
            }
        }
        guard WebPAnimEncoderAdd(encoder.encoder, nil, times[frames.count], nil) != 0 else {
            throw WebPErrors.encode("cannot finish animation: \(encoder.lastError)")
        }
        var output = WebPData()
        WebPDataInit(&output)
        defer { WebPDataClear(&output) }
        guard WebPAnimEncoderAssemble(encoder.encoder, &output) != 0, let bytes = output.bytes else {
            throw WebPErrors.encode("cannot assemble animation: \(encoder.lastError)")
        }
        return Array(UnsafeBufferPointer(start: bytes, count: output.size))
    }
}
