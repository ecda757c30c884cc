internal import CJPEG
import Foundation
import ImageCore

/// What one decode did: the DCT-scaled size libjpeg-turbo produced before any resampling (tests use it to prove a
/// thumbnail never decodes at full size).
struct JPEGDecodeReport: Equatable {
    /// The stored (header) size.
    var sourceWidth: Int
    var sourceHeight: Int
    /// The size `tjDecompress2` produced.
    var decodedWidth: Int
    var decodedHeight: Int
    /// The DCT scaling factor used.
    var scaleNumerator: Int
    var scaleDenominator: Int
}

/// Full and scaled decodes with TurboJPEG.
///
/// Output layout: gray8 for grayscale JPEGs, RGB8 otherwise (CMYK and YCCK are converted to RGB, honouring the
/// Adobe inversion). Thumbnails pick the smallest DCT scaling factor (1/8...1) whose output still covers the target,
/// then area-average to the exact target. EXIF orientation is applied after scaling unless
/// ``ImageDecodeOptions/applyOrientation`` is false. Recoverable libjpeg warnings (premature end of data, extraneous
/// bytes) still produce an image, like libjpeg-turbo's own tools; fatal errors throw. An image of bytes that end
/// before the EOI marker (libjpeg's "premature end of JPEG file", the missing area filled in) is marked
/// ``ImageMetadata/isIncomplete``, unless it is a preview (``ImageMetadata/isPartial``). Thread-safe: each call owns
/// its TurboJPEG handle.
enum JPEGDecoder {
    /// Flags for every decode: refuse progressive files with an absurd scan count (CPU bomb guard).
    private static let decodeFlags = Int32(TJFLAG_LIMITSCANS)

    static func decode(_ data: Data, options: ImageDecodeOptions, isPartial: Bool = false) throws -> Image {
        try decodeReporting(data, options: options, isPartial: isPartial).image
    }

    static func decodeReporting(
        _ data: Data, options: ImageDecodeOptions, isPartial: Bool = false
    ) throws -> (image: Image, report: JPEGDecodeReport) {
        try data.withUnsafeBytes { bytes in
            let markers = JPEGMarkers.scan(bytes)
            let tj = try TurboJPEG.decompressor()
            let header = try tj.header(bytes)
            try options.checkPixelBudget(width: header.width, height: header.height)

            let orientation = markers.orientation ?? .up
            let rotate = options.applyOrientation && orientation != .up
            let swap = rotate && orientation.swapsDimensions
            let shown = options.targetSize(
                forSourceWidth: swap ? header.height : header.width, height: swap ? header.width : header.height)
            let target = swap ? PixelSize(width: shown.height, height: shown.width) : shown
            let factor = scalingFactor(width: header.width, height: header.height, target: target)

            // CMYK reaches the colour converter as CMYK (an RGB buffer would have lost it); see ColorConversion.
            let cmykConverter = header.isCMYK && options.convertToSRGB ? ColorConversion.converter : nil
            let decoded = try decompress(
                bytes, header: header, factor: factor, tj: tj, adobe: markers.hasAdobe,
                cmyk: cmykConverter.map { ($0, markers.iccProfile) })
            var pixels = decoded.pixels
            // libjpeg always warns when it runs out of data; only then is the walk to EOI needed.
            let incomplete = !isPartial && decoded.warned && JPEGMarkers.endsBeforeEOI(bytes)
            let report = JPEGDecodeReport(
                sourceWidth: header.width, sourceHeight: header.height, decodedWidth: pixels.width,
                decodedHeight: pixels.height, scaleNumerator: factor.num, scaleDenominator: factor.denom)
            if pixels.width != target.width || pixels.height != target.height {
                pixels = pixels.areaResampled(width: target.width, height: target.height)
            }
            if rotate { pixels = pixels.oriented(orientation) }
            let metadata = ImageMetadata(
                orientation: rotate ? .up : orientation, sourceOrientation: orientation,
                iccProfile: cmykConverter == nil ? markers.iccProfile : nil, exif: markers.exif,
                sourcePixelWidth: header.width,
                sourcePixelHeight: header.height, isPartial: isPartial, isIncomplete: incomplete)
            return (Image(pixels: pixels, format: .jpeg, metadata: metadata), report)
        }
    }

    /// The smallest TurboJPEG scaling factor among 1, 1/2, 1/4 and 1/8 whose output is at least `target` in both
    /// dimensions.
    ///
    /// Only those four, as libvips's shrink-on-load: libjpeg-turbo's other factors (3/8, 5/8, 3/4, 7/8) run scalar
    /// inverse DCTs that cost more than decoding at the next of the four up and resampling the difference. On the
    /// 55 2 MP photos of the proxy benchmark (`Benchmarks/proxy/raw_jpeg_scales.c`, three runs): 3/8 takes 1.17×
    /// the CPU of 1/2, and 5/8, 3/4 and 7/8 1.4×, 1.7× and 2.2× that of a full decode. The area resampling after it
    /// starts from more pixels, which
    /// costs less than the decode saves and makes the thumbnail closer to the source (512 px thumbnails: +0.07 dB
    /// PSNR against a full-size Lanczos reduction, on every photo). The price is memory: a target just above half the
    /// source is decoded at full size (never more than a full decode takes).
    static func scalingFactor(width: Int, height: Int, target: PixelSize) -> (num: Int, denom: Int) {
        var count: Int32 = 0
        var best = (num: 1, denom: 1)
        guard let factors = tjGetScalingFactors(&count), count > 0 else { return best }
        for factor in UnsafeBufferPointer(start: factors, count: Int(count)) {
            let num = Int(factor.num)
            let denom = Int(factor.denom)
            guard num == 1, denom > 0, denom.nonzeroBitCount == 1 else { continue }
            let w = scaled(width, num, denom)
            let h = scaled(height, num, denom)
            if w >= target.width && h >= target.height && num * best.denom < best.num * denom {
                best = (num, denom)
            }
        }
        return best
    }

    /// TurboJPEG's TJSCALED: ceil(dimension * num / denom).
    static func scaled(_ dimension: Int, _ num: Int, _ denom: Int) -> Int { (dimension * num + denom - 1) / denom }

    /// Runs `tjDecompress2` at `factor` into a fresh buffer, converting CMYK to RGB: through `cmyk`'s converter
    /// and profile when given, else with the naive formula. `warned`: libjpeg warned (the pixels are usable).
    private static func decompress(
        _ bytes: UnsafeRawBufferPointer, header: JPEGHeader, factor: (num: Int, denom: Int), tj: TurboJPEG,
        adobe: Bool, cmyk: (converter: any ColorConverter, profile: [UInt8]?)? = nil
    ) throws -> (pixels: PixelBuffer, warned: Bool) {
        let width = scaled(header.width, factor.num, factor.denom)
        let height = scaled(header.height, factor.num, factor.denom)
        let format: TJPF = header.isGray ? TJPF_GRAY : (header.isCMYK ? TJPF_CMYK : TJPF_RGB)
        let channels = header.isGray ? 1 : (header.isCMYK ? 4 : 3)
        let rowBytes = width * channels
        let (total, overflow) = rowBytes.multipliedReportingOverflow(by: height)
        guard !overflow, rowBytes <= Int(Int32.max) else {
            throw ImageError(.imageTooLarge, stage: .decode, message: "JPEG: \(width)x\(height) overflows memory")
        }
        let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var warned = false
        /// Decompresses into `buffer` (exactly `total` bytes).
        func run(into buffer: UnsafeMutableBufferPointer<UInt8>) throws(ImageError) {
            let status = tjDecompress2(
                tj.handle, base, UInt(bytes.count), buffer.baseAddress, Int32(width), Int32(rowBytes),
                Int32(height), Int32(format.rawValue), decodeFlags)
            guard status == 0 || tj.lastFailureWasWarning else { throw tj.error(stage: .decode) }
            warned = status != 0
        }
        guard header.isCMYK else {
            // Straight into pooled storage: libjpeg writes every row (a warned, cut-short scan included: it pads
            // the missing data), so no byte of an earlier buffer stays.
            let layout: PixelLayout = header.isGray ? .gray8 : .rgb8
            let pixels = try PixelBuffer(
                validatingWidth: width, height: height, layout: layout, bytesPerRow: rowBytes, initializingWith: run)
            return (pixels, warned)
        }
        var failure: ImageError?
        let raw = [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            do throws(ImageError) {
                try run(into: buffer)
                initialized = total
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        if let cmyk {
            let samples = try ColorSamples(
                width: width, height: height, model: .cmyk, bitsPerSample: 8, isInverted: adobe, bytes: raw)
            do {
                return (try cmyk.converter.convertToSRGB(samples, iccProfile: cmyk.profile), warned)
            } catch {
                throw ImageError.wrap(error, as: .badImageData, stage: .decode)
            }
        }
        let rgb = cmykToRGB(raw, count: width * height, adobe: adobe)
        return (try PixelBuffer(width: width, height: height, layout: .rgb8, validating: rgb), warned)
    }

    /// Converts CMYK (as libjpeg outputs it; Adobe files store it inverted) to RGB.
    static func cmykToRGB(_ cmyk: [UInt8], count: Int, adobe: Bool) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count * 3) { out, initialized in
            cmyk.withUnsafeBufferPointer { src in
                for i in 0..<count {
                    var c = Int(src[i * 4])
                    var m = Int(src[i * 4 + 1])
                    var y = Int(src[i * 4 + 2])
                    var k = Int(src[i * 4 + 3])
                    if !adobe {
                        c = 255 - c
                        m = 255 - m
                        y = 255 - y
                        k = 255 - k
                    }
                    // Inverted form: channel = (1 - ink) * (1 - black).
                    out[i * 3] = UInt8((c * k + 127) / 255)
                    out[i * 3 + 1] = UInt8((m * k + 127) / 255)
                    out[i * 3 + 2] = UInt8((y * k + 127) / 255)
                }
            }
            initialized = count * 3
        }
    }
}
