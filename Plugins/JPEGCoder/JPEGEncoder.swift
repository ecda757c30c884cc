internal import CJPEG
import Foundation
import ImageCore

/// Encodes the first frame of an ``Image`` with `tjCompress2`.
///
/// Alpha is composited over ``ImageEncodeOptions/backgroundColor``; gray images stay gray. `quality` 0...1 maps to
/// libjpeg quality 1...100; `progressive` sets `TJFLAG_PROGRESSIVE`; `chromaSubsampling` nil means 4:2:0 for colour.
/// `maxPixelSize` downscales (area average) first. A `perceptualTarget` searches the lowest quality whose decode is
/// within the distance of those pixels (``PerceptualQuality``). `maxFileSize` then searches the quality downwards
/// from the requested (or chosen) one (``QualitySearch``); when even quality 1 is too big, the quality-1 result is
/// returned (best effort, like SDWebImage).
/// The ICC profile is written as APP2 chunks; a non-`up` ``ImageMetadata/orientation`` (raw pixels kept) is written
/// as a minimal EXIF APP1 so viewers still turn the image.
enum JPEGEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> EncodedImage {
        var pixels = image.pixels
        guard pixels.width > 0, pixels.height > 0 else {
            throw ImageError(.encodeFailed, stage: .encode, message: "JPEG: cannot encode an empty image")
        }
        if let limit = options.maxPixelSize, let size = fittedSize(pixels.width, pixels.height, inside: limit) {
            pixels = pixels.areaResampled(width: size.width, height: size.height)
        }
        if pixels.layout.hasAlpha { pixels = composited(pixels, over: options.backgroundColor) }
        // JPEG stores sides in 16 bits and TurboJPEG takes 32-bit sizes: checked before any conversion.
        guard pixels.width <= 65_535, pixels.height <= 65_535, pixels.bytesPerRow <= Int(Int32.max) else {
            throw ImageError(
                .encodeFailed, stage: .encode,
                message: "JPEG cannot store \(pixels.width)x\(pixels.height) (sides up to 65535)")
        }
        let isGray = pixels.layout == .gray8
        var subsampling: TJSAMP
        switch options.chromaSubsampling {
        case _ where isGray, .gray: subsampling = TJSAMP_GRAY
        case .s444: subsampling = TJSAMP_444
        case .s422: subsampling = TJSAMP_422
        case .s420, nil: subsampling = TJSAMP_420
        }
        let flags = options.progressive ? Int32(TJFLAG_PROGRESSIVE) : 0
        let tj = try TurboJPEG.compressor()
        var level: Int
        var best: Data
        var report: PerceptualReport?
        if let target = options.perceptualTarget {
            func search(_ subsampling: TJSAMP) throws -> PerceptualSearchResult {
                try PerceptualQuality.search(
                    target, reference: pixels, levels: 1...target.topLevel(of: 1...100, perUnit: 100),
                    start: estimate(distance: target.maxDistance),
                    logSlope: logDistancePerLevel, quality: { Double($0) / 100 },
                    encode: { try compress(pixels, quality: $0, subsampling: subsampling, flags: flags, tj: tj) },
                    decode: { try JPEGDecoder.decode($0, options: ImageDecodeOptions()).pixels })
            }
            let result = try search(subsampling)
            (level, best, report) = (result.level, result.data, result.report)
            // 4:2:0 halves the chroma resolution, which puts a floor under butteraugli's max norm on sharp colour
            // edges (a red-on-green photo stays at 4.75 at q 100 at 256 px). When the coder chooses the subsampling
            // and 4:2:0 misses the target, a second search runs at 4:4:4 (up to maxEncodes more encodes).
            // Not under a quality cap: 4:4:4 at the cap costs more bytes than the fixed quality the cap stands for.
            if result.report.meetsTarget == false, options.chromaSubsampling == nil, subsampling == TJSAMP_420,
                target.maxQuality >= 1
            {
                let full = try search(TJSAMP_444)
                let chosen = (full.report.distance ?? .infinity) < (result.report.distance ?? .infinity) ? full : result
                if chosen.data == full.data { subsampling = TJSAMP_444 }
                (level, best) = (chosen.level, chosen.data)
                report = PerceptualReport(
                    target: target, metric: chosen.report.metric, quality: chosen.report.quality,
                    distance: chosen.report.distance, encodes: result.report.encodes + full.report.encodes)
            }
        } else {
            level = max(1, min(100, Int((options.quality * 100).rounded())))
            best = try compress(pixels, quality: level, subsampling: subsampling, flags: flags, tj: tj)
        }
        let chosenSubsampling = subsampling
        let encode = { (quality: Int) throws -> Data in
            try compress(pixels, quality: quality, subsampling: chosenSubsampling, flags: flags, tj: tj)
        }
        if let limit = options.maxFileSize, best.count > limit, level > 1 {
            // The highest quality below the chosen one whose output fits; the smallest output when none does.
            let outcome = try QualitySearch.highestPassing(
                levels: 1...(level - 1), start: level - 1, threshold: Double(limit), logSlope: logBytesPerLevel,
                known: [QualitySearch.Probe(level: level, value: Double(best.count), payload: best)]
            ) { (quality: Int) throws -> (value: Double, payload: Data) in
                let data = try encode(quality)
                return (Double(data.count), data)
            }
            if let chosen = outcome.best ?? outcome.probes.min(by: { $0.value < $1.value }),
                chosen.payload.count < best.count
            {
                (level, best) = (chosen.level, chosen.payload)
            }
        }
        var metadata = image.metadata
        metadata.iccProfile = metadata.iccProfile(for: pixels.layout)  // never a CMYK profile on RGB pixels
        return EncodedImage(
            data: withMetadataSegments(best, metadata: metadata), quality: Double(level) / 100, perceptual: report)
    }

    /// The expected change of log(butteraugli max distance) per quality step (the corpus photos at 256 and 512 px:
    /// about 4.8 at q 50, 3.1 at q 80).
    static let logDistancePerLevel = -0.013
    /// The expected change of log(size) per quality step (sizes roughly treble from q 30 to q 90).
    static let logBytesPerLevel = 0.02

    /// The first quality to try for a target distance: q 80 reaches about 3.1 on the corpus photos at 256 and
    /// 512 px (the median; 2.5 to 6.4), and the distance moves by ``logDistancePerLevel`` a step.
    static func estimate(distance: Double) -> Int {
        let steps = (log(distance) - log(3.1)) / logDistancePerLevel
        return max(1, min(100, 80 + Int(steps.rounded())))
    }

    private static func compress(
        _ pixels: PixelBuffer, quality: Int, subsampling: TJSAMP, flags: Int32, tj: TurboJPEG
    ) throws -> Data {
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        defer { if let output { tjFree(output) } }
        let format = pixels.layout == .gray8 ? TJPF_GRAY : TJPF_RGB
        let status = pixels.withUnsafeBytes { src in
            tjCompress2(
                tj.handle, src.baseAddress, Int32(pixels.width), Int32(pixels.bytesPerRow), Int32(pixels.height),
                Int32(format.rawValue), &output, &size, Int32(subsampling.rawValue), Int32(quality), flags)
        }
        guard status == 0, let output else { throw tj.error(stage: .encode) }
        return Data(bytes: output, count: Int(size))
    }

    /// The size that fits `width × height` inside `limit` keeping the aspect ratio; nil when it already fits.
    static func fittedSize(_ width: Int, _ height: Int, inside limit: PixelSize) -> PixelSize? {
        guard limit.width > 0, limit.height > 0, width > limit.width || height > limit.height else { return nil }
        let scale = min(Double(limit.width) / Double(width), Double(limit.height) / Double(height))
        return PixelSize(
            width: max(1, Int((Double(width) * scale).rounded())),
            height: max(1, Int((Double(height) * scale).rounded())))
    }

    /// Drops alpha by compositing over `background` (RGBA → RGB, gray+alpha → gray).
    static func composited(_ source: PixelBuffer, over background: RGBAColor) -> PixelBuffer {
        let channels = source.layout.bytesPerPixel
        let outChannels = channels - 1
        let premultiplied = source.alphaMode == .premultiplied
        let gray = (Int(background.red) * 299 + Int(background.green) * 587 + Int(background.blue) * 114) / 1000
        let back = outChannels == 1 ? [gray] : [Int(background.red), Int(background.green), Int(background.blue)]
        let rowBytes = source.width * outChannels
        let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * source.height) { out, initialized in
            source.withUnsafeBytes { src in
                for y in 0..<source.height {
                    for x in 0..<source.width {
                        let s = y * source.bytesPerRow + x * channels
                        let d = y * rowBytes + x * outChannels
                        let alpha = Int(src[s + channels - 1])
                        for c in 0..<outChannels {
                            let colour = Int(src[s + c])
                            let value =
                                premultiplied
                                ? colour + (back[c] * (255 - alpha) + 127) / 255
                                : (colour * alpha + back[c] * (255 - alpha) + 127) / 255
                            out[d + c] = UInt8(min(255, value))
                        }
                    }
                }
            }
            initialized = rowBytes * source.height
        }
        return PixelBuffer(
            width: source.width, height: source.height, layout: outChannels == 1 ? .gray8 : .rgb8, bytes: bytes)
    }

    /// Inserts APP1 (orientation) and APP2 (ICC) segments after SOI and any APP0.
    static func withMetadataSegments(_ jpeg: Data, metadata: ImageMetadata) -> Data {
        var segments: [UInt8] = []
        if metadata.orientation != .up {
            segments += segment(
                marker: 0xE1, payload: Array("Exif\0\0".utf8) + EXIFOrientation.block(for: metadata.orientation))
        }
        if let icc = metadata.iccProfile, !icc.isEmpty {
            let chunkSize = 65_519  // 65535 - 2 (length) - 14 (signature, sequence, count)
            let chunkCount = (icc.count + chunkSize - 1) / chunkSize
            if chunkCount <= 255 {
                for index in 0..<chunkCount {
                    let chunk = icc[index * chunkSize..<min(icc.count, (index + 1) * chunkSize)]
                    let header = Array("ICC_PROFILE\0".utf8) + [UInt8(index + 1), UInt8(chunkCount)]
                    segments += segment(marker: 0xE2, payload: header + chunk)
                }
            }
        }
        guard !segments.isEmpty, jpeg.count >= 4 else { return jpeg }
        var insertAt = 2
        if jpeg[jpeg.startIndex + 2] == 0xFF, jpeg[jpeg.startIndex + 3] == 0xE0, jpeg.count >= 6 {
            let length = Int(jpeg[jpeg.startIndex + 4]) << 8 | Int(jpeg[jpeg.startIndex + 5])
            insertAt = min(jpeg.count, 4 + length)
        }
        var result = Data(capacity: jpeg.count + segments.count)
        result.append(jpeg.prefix(insertAt))
        result.append(contentsOf: segments)
        result.append(jpeg.dropFirst(insertAt))
        return result
    }

    private static func segment(marker: UInt8, payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }
}
