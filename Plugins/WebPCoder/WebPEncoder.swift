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

/// Encodes still and animated WebP: lossy (`WebPConfig` quality), lossless (exact, keeping the colour under
/// transparent pixels), effort → `method`, `maxPixelSize` through libwebp's rescaler, and `maxFileSize` by a
/// binary search on the lossy quality.
enum WebPEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> Data {
        let count = options.firstFrameOnly ? 1 : image.frameCount
        let source = PixelSize(width: image.width, height: image.height)
        let target = options.maxPixelSize.map { WebPPixels.fit(source, inside: $0) } ?? source
        var frames: [(rgba: [UInt8], hasAlpha: Bool, duration: Double)] = []
        for index in 0..<count {
            let frame = try image.frame(at: index)
            let converted = WebPPixels.straightRGBA(frame.pixels)
            frames.append((converted.rgba, converted.hasAlpha, frame.duration))
        }
        let hasAlpha = frames.contains { $0.hasAlpha }
        func attempt(quality: Float) throws(ImageError) -> [UInt8] {
            let config = try makeConfig(quality: quality, options: options)
            if frames.count == 1 {
                return try encodeStill(frames[0].rgba, size: source, target: target, hasAlpha: hasAlpha, config: config)
            }
            return try encodeAnimation(frames, size: source, target: target, loopCount: image.loopCount, config: config)
        }
        let quality = Float(min(max(options.quality, 0), 1) * 100)
        let first = try attempt(quality: quality)
        guard let limit = options.maxFileSize, first.count > limit, !options.lossless else { return Data(first) }
        // Largest integer quality below the requested one whose output fits; the smallest output if none does.
        var low = 0
        var high = Int(quality.rounded(.down)) - 1
        var best: [UInt8]? = nil
        var smallest = first
        while low <= high {
            let middle = (low + high) / 2
            let output = try attempt(quality: Float(middle))
            if output.count < smallest.count { smallest = output }
            if output.count <= limit {
                best = output
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return Data(best ?? smallest)
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
        _ rgba: [UInt8], size: PixelSize, target: PixelSize, hasAlpha: Bool, config: WebPConfig
    ) throws(ImageError) -> WebPPictureHandle {
        let picture = try WebPPictureHandle(
            rgba: rgba, width: size.width, height: size.height, hasAlpha: hasAlpha, useARGB: config.lossless != 0)
        try picture.rescale(to: target)
        return picture
    }

    private static func encodeStill(
        _ rgba: [UInt8], size: PixelSize, target: PixelSize, hasAlpha: Bool, config: WebPConfig
    ) throws(ImageError) -> [UInt8] {
        let picture = try makePicture(rgba, size: size, target: target, hasAlpha: hasAlpha, config: config)
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

    private static func encodeAnimation(
        _ frames: [(rgba: [UInt8], hasAlpha: Bool, duration: Double)], size: PixelSize, target: PixelSize,
        loopCount: Int, config: WebPConfig
    ) throws(ImageError) -> [UInt8] {
        let encoder = try WebPAnimEncoderHandle(size: target, loopCount: loopCount)
        var config = config
        var timestamp = 0
        for frame in frames {
            let picture = try makePicture(frame.rgba, size: size, target: target, hasAlpha: true, config: config)
            guard WebPAnimEncoderAdd(encoder.encoder, picture.picture, Int32(timestamp), &config) != 0 else {
                throw WebPErrors.encode("cannot add animation frame: \(encoder.lastError)")
            }
            timestamp += max(1, Int((frame.duration * 1000).rounded()))
        }
        guard WebPAnimEncoderAdd(encoder.encoder, nil, Int32(timestamp), nil) != 0 else {
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
