internal import CJXL
import ImageCore

/// Owns a `JxlButteraugliApi`; destroys it in `deinit`. Not thread-safe: one comparison.
final class ButteraugliHandle {
    let api: OpaquePointer

    init() throws(ImageError) {
        guard let api = JxlButteraugliApiCreate(nil) else {
            throw ImageError(.encodeFailed, stage: .encode, message: "butteraugli: JxlButteraugliApiCreate failed")
        }
        self.api = api
    }

    deinit { JxlButteraugliApiDestroy(api) }
}

/// Butteraugli through libjxl's API (`JxlButteraugliCompute`): the ``/ImageCore/PerceptualMetric`` behind
/// ``/ImageCore/ImageEncodeOptions/perceptualTarget``, the same metric JPEG XL's encoder aims at.
///
/// The distance is the max norm (`JxlButteraugliResultGetMaxDistance`), computed with libjxl's defaults (intensity
/// target, HF asymmetry) on 8-bit sRGB: opaque pixels as RGB, translucent ones as straight RGBA (libjxl then compares
/// over black and over white and keeps the worse); gray is compared as RGB. One thread per comparison (no parallel
/// runner): the encode pool already runs one image per core.
///
/// Cost: about 0.8 µs a pixel on this project's machine (≈ 140 ms CPU for a 512×341 photo, ≈ 46 ms at 256×171), 100–200
/// times a JPEG encode of the same pixels; Benchmarks/README.md has the figures. Register it with
/// `PerceptualQuality.register(ButteraugliMetric.shared)` (`registerDefaultPlugins()` does). Thread-safe: each call
/// owns its libjxl objects.
public struct ButteraugliMetric: PerceptualMetric {
    /// The shared instance.
    public static let shared = ButteraugliMetric()

    /// Creates the metric.
    public init() {}

    /// `butteraugli`.
    public var name: String { "butteraugli" }

    /// The butteraugli max-norm distance between `reference` and `candidate` (same size).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `encodeFailed` when the sizes differ, a side is 0, or libjxl fails.
    public func distance(from reference: PixelBuffer, to candidate: PixelBuffer) throws -> Double {
        try compare(reference, candidate)
    }

    private func compare(_ reference: PixelBuffer, _ candidate: PixelBuffer) throws(ImageError) -> Double {
        guard reference.width == candidate.width, reference.height == candidate.height, reference.width > 0,
            reference.height > 0, reference.width <= Int(UInt32.max), reference.height <= Int(UInt32.max)
        else {
            throw ImageError(
                .encodeFailed, stage: .encode,
                message: "butteraugli: \(reference.width)x\(reference.height) against "
                    + "\(candidate.width)x\(candidate.height)")
        }
        var first = reference.straightRGBABytes()
        var second = candidate.straightRGBABytes()
        // libjxl compares images with alpha twice (blended over black and over white): opaque ones go as RGB.
        let channels = Self.isOpaque(first) && Self.isOpaque(second) ? 3 : 4
        if channels == 3 {
            first = Self.rgb(first)
            second = Self.rgb(second)
        }
        let handle = try ButteraugliHandle()
        var format = JxlPixelFormat(
            num_channels: UInt32(channels), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        let result = first.withUnsafeBytes { a in
            second.withUnsafeBytes { b in
                JxlButteraugliCompute(
                    handle.api, UInt32(reference.width), UInt32(reference.height), &format, a.baseAddress, a.count,
                    &format, b.baseAddress, b.count)
            }
        }
        guard let result else {
            throw ImageError(.encodeFailed, stage: .encode, message: "butteraugli: JxlButteraugliCompute failed")
        }
        defer { JxlButteraugliResultDestroy(result) }
        return Double(JxlButteraugliResultGetMaxDistance(result))
    }

    private static func isOpaque(_ rgba: [UInt8]) -> Bool {
        rgba.withUnsafeBufferPointer { bytes in
            var index = 3
            while index < bytes.count {
                if bytes[index] != 255 { return false }
                index += 4
            }
            return true
        }
    }

    /// RGBA without its alpha bytes.
    private static func rgb(_ rgba: [UInt8]) -> [UInt8] {
        let count = rgba.count / 4
        return [UInt8](unsafeUninitializedCapacity: count * 3) { out, initialized in
            rgba.withUnsafeBufferPointer { src in
                for index in 0..<count {
                    out[index * 3] = src[index * 4]
                    out[index * 3 + 1] = src[index * 4 + 1]
                    out[index * 3 + 2] = src[index * 4 + 2]
                }
            }
            initialized = count * 3
        }
    }
}
