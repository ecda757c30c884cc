import Foundation
import ImageCore

extension ImageFormat {
    /// Binary Portable Pixmap (netpbm "P6"), a format the SDK does not ship a coder for.
    static let ppm = ImageFormat(rawValue: "ppm")
}

/// A PPM decode option of this coder's own: a gamma applied to every sample while decoding (SDWebImage's custom
/// `SDImageCoderOption` keys). It changes the image, so the SDK makes it part of the cache key (``changesImage``
/// defaults to true): loads with different gammas never share a cache entry.
enum PPMGamma: CoderOptionKey {
    typealias Value = Double
    static let name = "ppm.gamma"
}

/// Decodes and encodes binary PPM ("P6") images: the smallest complete ``ImageCoder``.
///
/// What every coder must do, and where it happens here:
/// - `canDecode` looks at the magic only (cheap; the manager asks every coder).
/// - `probe` reads the size from the header, so the manager can refuse a decompression bomb before any decode.
/// - `decode` checks the pixel budget itself too (`options.checkPixelBudget`), because callers may decode
///   through the coder directly; it never trusts the header's size against the real byte count.
/// - Errors are `ImageError`s with a code and stage.
/// - Its own options arrive typed in `options.coderOptions` (``PPMGamma``).
///
/// Stateless, so it is `Sendable` and safe to call from the SDK's decode threads concurrently.
struct PPMCoder: ImageCoder {
    func canDecode(_ data: Data) -> Bool { PPMHeader(data) != nil }

    func probe(_ data: Data) -> ImageProperties? {
        PPMHeader(data).map { ImageProperties(format: .ppm, width: $0.width, height: $0.height, frameCount: 1) }
    }

    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        guard let header = PPMHeader(data) else {
            throw ImageError(.badImageData, stage: .decode, message: "not a binary PPM (P6) header")
        }
        try options.checkPixelBudget(width: header.width, height: header.height)
        // Within the budget these products cannot overflow.
        let sampleCount = header.width * header.height * 3
        guard data.count - header.pixelOffset >= sampleCount * header.bytesPerSample else {
            throw ImageError(
                .badImageData, stage: .decode, message: "PPM truncated: fewer samples than the header says")
        }
        let samples: [UInt8] = data.withUnsafeBytes { raw in
            let start = header.pixelOffset
            if header.maxValue == 255 { return Array(raw[start..<start + sampleCount]) }
            return (0..<sampleCount).map { i in
                let value =
                    header.bytesPerSample == 1
                    ? Int(raw[start + i]) : Int(raw[start + 2 * i]) << 8 | Int(raw[start + 2 * i + 1])
                return UInt8(min(value, header.maxValue) * 255 / header.maxValue)
            }
        }
        let gamma = options.coderOptions[PPMGamma.self] ?? 1
        let corrected = gamma == 1 ? samples : Self.applying(gamma: gamma, to: samples)
        let full = PixelBuffer(width: header.width, height: header.height, layout: .rgb8, bytes: corrected)
        return Image(pixels: Self.thumbnail(full, options: options), format: .ppm)
    }

    func canEncode(to format: ImageFormat) -> Bool { format == .ppm }

    /// `value^(1/gamma)` per sample, through a 256-entry table.
    private static func applying(gamma: Double, to samples: [UInt8]) -> [UInt8] {
        let exponent = gamma > 0 && gamma.isFinite ? 1 / gamma : 1
        let table = (0..<256).map { UInt8((pow(Double($0) / 255, exponent) * 255).rounded()) }
        return samples.map { table[Int($0)] }
    }

    /// Writes 8-bit P6; alpha is composited over `options.backgroundColor` because PPM has no alpha channel.
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard format == .ppm else {
            throw ImageError(.noCoder, stage: .encode, message: "PPMCoder cannot encode \(format)")
        }
        let pixels = image.pixels
        let background = options.backgroundColor
        var samples: [UInt8] = []
        samples.reserveCapacity(pixels.width * pixels.height * 3)
        for y in 0..<pixels.height {
            for x in 0..<pixels.width {
                let p = pixels.pixel(x: x, y: y)
                let i = p.startIndex
                let (r, g, b, a): (UInt8, UInt8, UInt8, UInt8) =
                    switch pixels.layout {
                    case .rgba8: (p[i], p[i + 1], p[i + 2], p[i + 3])
                    case .rgb8: (p[i], p[i + 1], p[i + 2], 255)
                    case .gray8: (p[i], p[i], p[i], 255)
                    case .grayAlpha8: (p[i], p[i], p[i], p[i + 1])
                    }
                let premultiplied = pixels.alphaMode == .premultiplied
                samples.append(Self.composite(r, alpha: a, over: background.red, premultiplied: premultiplied))
                samples.append(Self.composite(g, alpha: a, over: background.green, premultiplied: premultiplied))
                samples.append(Self.composite(b, alpha: a, over: background.blue, premultiplied: premultiplied))
            }
        }
        return Data("P6\n\(pixels.width) \(pixels.height)\n255\n".utf8) + samples
    }

    private static func composite(_ color: UInt8, alpha: UInt8, over background: UInt8, premultiplied: Bool) -> UInt8 {
        let a = Int(alpha)
        let source = premultiplied ? Int(color) * 255 : Int(color) * a
        return UInt8((source + Int(background) * (255 - a) + 127) / 255)
    }

    /// PPM has no reduced decode: when a thumbnail was asked for, sample the nearest source pixels.
    private static func thumbnail(_ source: PixelBuffer, options: ImageDecodeOptions) -> PixelBuffer {
        let target = options.targetSize(forSourceWidth: source.width, height: source.height)
        guard target.width != source.width || target.height != source.height else { return source }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(target.width * target.height * 3)
        for y in 0..<target.height {
            let row = (y * source.height / target.height) * source.bytesPerRow
            for x in 0..<target.width {
                let offset = row + (x * source.width / target.width) * 3
                bytes += source.bytes[offset..<offset + 3]
            }
        }
        return PixelBuffer(width: target.width, height: target.height, layout: .rgb8, bytes: bytes)
    }
}
