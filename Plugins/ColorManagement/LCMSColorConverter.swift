internal import CLCMS2
import ImageCore
import Synchronization

/// Converts ICC-tagged and CMYK pixels to sRGB with Little CMS 2 (lcms2): the ``/ImageCore/ColorConverter`` behind
/// ``/ImageCore/ImageDecodeOptions/convertToSRGB``.
///
/// Register it once, then turn the option on where colours must be right (a thumbnail service):
///
/// ```swift
/// ColorConversion.register(LCMSColorConverter.shared)
/// var decode = ImageDecodeOptions()
/// decode.convertToSRGB = true
/// ```
///
/// What it does: RGB and gray pixels through their profile to sRGB (gray to gray with the sRGB tone curve), alpha
/// copied (premultiplied input comes back straight); 16-bit samples converted before they are reduced to 8 bits;
/// CMYK (plain or Adobe-inverted) through its CMYK profile, or — without one — the naive `(1 − C)(1 − K)` formula
/// browsers use for untagged CMYK (lcms2 ships no press profile). A profile lcms2 finds equivalent to sRGB (its
/// transform maps a 17³ grid of 8-bit colours onto itself within one level) is skipped.
///
/// Threading: thread-safe. Transforms are built once per (profile, pixel format) and kept in a small cache behind
/// a `Mutex` (built outside it); lcms2 runs them without its one-pixel cache, so one transform serves every thread.
/// Calls block: run them on the decode pool. Errors: ``/ImageCore/ImageError`` `badImageData` (stage `decode`) with an
/// ``LCMSError`` cause when lcms2 refuses the profile.
public final class LCMSColorConverter: ColorConverter, Sendable {
    /// The shared converter to register with ``/ImageCore/ColorConversion/register(_:)``.
    public static let shared = LCMSColorConverter()

    /// How colours outside sRGB's gamut are brought in (ICC rendering intents).
    public enum RenderingIntent: UInt32, Sendable {
        /// Compress the whole gamut (the profile's perceptual tables; for matrix profiles the same as relative).
        case perceptual = 0
        /// Keep in-gamut colours exact, clip the rest, map white to white.
        case relativeColorimetric = 1
        /// Keep saturation.
        case saturation = 2
        /// Keep colours exact, white included.
        case absoluteColorimetric = 3
    }

    /// The intent every transform uses.
    public let intent: RenderingIntent
    /// The most transforms kept.
    public let cacheCapacity: Int

    private let cache: Mutex<TransformCache>

    /// Creates a converter; the default intent is perceptual, what Pillow's `ImageCms` and most viewers use.
    public init(intent: RenderingIntent = .perceptual, cacheCapacity: Int = 32) {
        self.intent = intent
        self.cacheCapacity = max(1, cacheCapacity)
        cache = Mutex(TransformCache())
    }

    /// The linked lcms2 version, e.g. 2140 for 2.14.
    public static var libraryVersion: Int { Int(cmsGetEncodedCMMversion()) }

    // MARK: ColorConverter

    /// Converts 8-bit RGB or gray pixels described by `iccProfile` to sRGB, keeping the layout.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` when lcms2 refuses the profile or it does not fit the layout.
    public func convertToSRGB(_ pixels: PixelBuffer, iccProfile: [UInt8]) throws -> PixelBuffer {
        let model: ColorModel = pixels.layout == .rgb8 || pixels.layout == .rgba8 ? .rgb : .gray
        try requireModel(of: iccProfile, is: model)
        let source = pixels.alphaMode == .premultiplied ? Premultiplication.straightened(pixels) : pixels
        let format = LCMSFormat.of(model, bytesPerSample: 1, alpha: pixels.layout.hasAlpha)
        guard let transform = try transform(profile: iccProfile, model: model, input: format, output: format) else {
            return source
        }
        let rowBytes = source.width * source.layout.bytesPerPixel
        // Straight into pooled storage: the transform writes every row.
        return PixelBuffer(
            width: source.width, height: source.height, layout: source.layout,
            alphaMode: source.layout.hasAlpha ? .straight : nil, bytesPerRow: rowBytes
        ) { (out: UnsafeMutableBufferPointer<UInt8>) in
            source.withUnsafeBytes { input in
                transform.run(
                    UnsafeRawPointer(input.baseAddress!), inputStride: source.bytesPerRow,
                    UnsafeMutableRawPointer(out.baseAddress!), outputStride: rowBytes, width: source.width,
                    height: source.height)
            }
        }
    }

    /// Converts raw samples to 8-bit sRGB (`rgb8`/`rgba8` for RGB and CMYK, `gray8`/`grayAlpha8` for gray).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` when lcms2 refuses the profile, or for CMYK with alpha.
    public func convertToSRGB(_ samples: ColorSamples, iccProfile: [UInt8]?) throws -> PixelBuffer {
        if samples.model == .cmyk {
            guard !samples.hasAlpha else {
                throw ImageError(.badImageData, stage: .decode, message: "CMYK with alpha is not supported")
            }
            guard let iccProfile, ICCProfileHeader(iccProfile)?.colorModel == .cmyk else {
                return NaiveCMYK.convert(samples)
            }
            return try run(samples, profile: iccProfile, outputModel: .rgb)
        }
        let layout: PixelLayout =
            samples.model == .rgb ? (samples.hasAlpha ? .rgba8 : .rgb8) : (samples.hasAlpha ? .grayAlpha8 : .gray8)
        if samples.bitsPerSample == 8 {
            let pixels = try PixelBuffer(
                width: samples.width, height: samples.height, layout: layout, alphaMode: samples.alphaMode,
                bytesPerRow: samples.bytesPerRow, validating: samples.bytes)
            guard let iccProfile, ICCProfileHeader(iccProfile)?.colorModel == samples.model else { return pixels }
            return try convertToSRGB(pixels, iccProfile: iccProfile)
        }
        let straight = samples.alphaMode == .premultiplied ? Premultiplication.straightened(samples) : samples
        guard let iccProfile, ICCProfileHeader(iccProfile)?.colorModel == samples.model else {
            return Premultiplication.reduced(straight, layout: layout)
        }
        return try run(straight, profile: iccProfile, outputModel: samples.model)
    }

    // MARK: Internals

    private func run(_ samples: ColorSamples, profile: [UInt8], outputModel: ColorModel) throws -> PixelBuffer {
        let input = LCMSFormat.of(
            samples.model, bytesPerSample: samples.bitsPerSample / 8, alpha: samples.hasAlpha,
            inverted: samples.isInverted)
        let output = LCMSFormat.of(outputModel, bytesPerSample: 1, alpha: samples.hasAlpha)
        let layout: PixelLayout =
            outputModel == .gray ? (samples.hasAlpha ? .grayAlpha8 : .gray8) : (samples.hasAlpha ? .rgba8 : .rgb8)
        let rowBytes = samples.width * layout.bytesPerPixel
        let transform = try transform(profile: profile, model: samples.model, input: input, output: output)
        guard let transform else { return Premultiplication.reduced(samples, layout: layout) }
        let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * samples.height) { out, initialized in
            samples.bytes.withUnsafeBytes { raw in
                transform.run(
                    raw.baseAddress!, inputStride: samples.bytesPerRow, out.baseAddress!, outputStride: rowBytes,
                    width: samples.width, height: samples.height)
            }
            initialized = rowBytes * samples.height
        }
        return try PixelBuffer(
            width: samples.width, height: samples.height, layout: layout,
            alphaMode: samples.hasAlpha ? .straight : nil, validating: bytes)
    }

    private func requireModel(of profile: [UInt8], is model: ColorModel) throws(ImageError) {
        guard let header = ICCProfileHeader(profile) else {
            throw ImageError(
                .badImageData, stage: .decode, message: "the ICC profile has no valid header",
                underlying: LCMSError(description: "\(profile.count) bytes without an 'acsp' header"))
        }
        guard header.colorModel == model else {
            throw ImageError(
                .badImageData, stage: .decode,
                message: "a '\(header.colorSpace)' ICC profile cannot describe \(model) pixels")
        }
    }

    /// The cached transform for (profile, formats), building it on a miss; nil when the profile is sRGB already
    /// (checked for RGB 8-bit input, the common case of a tagged sRGB file).
    private func transform(profile: [UInt8], model: ColorModel, input: UInt32, output: UInt32) throws(ImageError)
        -> LCMSTransform?
    {
        let key = TransformCache.Key(profile: profile, input: input, output: output)
        if let hit = cache.withLock({ $0.lookup(key) }) { return hit.transform }
        let source = try LCMSProfile(bytes: profile)
        let target = model == .gray ? LCMSProfile.sRGBGray() : LCMSProfile.sRGB()
        let transform = try LCMSTransform(
            from: source, inputFormat: input, to: target, outputFormat: output, intent: intent.rawValue)
        let isIdentity = model == .rgb && input == output && Self.isIdentity(transform, alpha: input >> 7 & 7 != 0)
        let entry = TransformCache.Entry(transform: isIdentity ? nil : transform)
        cache.withLock { $0.insert(entry, for: key, capacity: cacheCapacity) }
        return entry.transform
    }

    /// True when `transform` (8-bit RGB to 8-bit RGB) moves no colour of a 17³ grid by more than one level.
    private static func isIdentity(_ transform: LCMSTransform, alpha: Bool) -> Bool {
        let channels = alpha ? 4 : 3
        var grid: [UInt8] = []
        grid.reserveCapacity(17 * 17 * 17 * channels)
        for r in 0..<17 {
            for g in 0..<17 {
                for b in 0..<17 {
                    grid += [UInt8(min(255, r * 16)), UInt8(min(255, g * 16)), UInt8(min(255, b * 16))]
                    if alpha { grid.append(255) }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: grid.count)
        grid.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                transform.run(
                    input.baseAddress!, inputStride: grid.count, output.baseAddress!, outputStride: grid.count,
                    width: 17 * 17 * 17, height: 1)
            }
        }
        return zip(grid, out).allSatisfy { abs(Int($0) - Int($1)) <= 1 }
    }
}

/// The transforms a converter keeps: at most `capacity`, the oldest dropped first.
struct TransformCache {
    struct Key: Hashable {
        let profile: [UInt8]
        let input: UInt32
        let output: UInt32
    }

    /// A transform, or nil for a profile equivalent to sRGB (nothing to do).
    struct Entry {
        let transform: LCMSTransform?
    }

    private var entries: [Key: Entry] = [:]
    private var order: [Key] = []

    func lookup(_ key: Key) -> Entry? { entries[key] }

    mutating func insert(_ entry: Entry, for key: Key, capacity: Int) {
        if entries.updateValue(entry, forKey: key) == nil { order.append(key) }
        while order.count > capacity { entries[order.removeFirst()] = nil }
    }
}
