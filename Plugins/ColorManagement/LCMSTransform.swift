internal import CLCMS2
import ImageCore

/// lcms2's failure to open a profile or build a transform, carried as the cause of an ``/ImageCore/ImageError``.
public struct LCMSError: Error, Sendable, CustomStringConvertible {
    /// What lcms2 refused.
    public let description: String
}

/// lcms2 pixel formats (`TYPE_*` in lcms2.h are macro compositions Swift cannot import).
enum LCMSFormat {
    static func make(colorSpace: Int32, channels: Int, bytes: Int, extra: Int = 0, flavor: Int = 0) -> UInt32 {
        UInt32(colorSpace) << 16 | UInt32(flavor) << 13 | UInt32(extra) << 7 | UInt32(channels) << 3 | UInt32(bytes & 7)
    }

    /// The format of `model` samples of `bytesPerSample` (1 or 2), with or without a trailing alpha.
    static func of(_ model: ColorModel, bytesPerSample: Int, alpha: Bool, inverted: Bool = false) -> UInt32 {
        let space: Int32
        switch model {
        case .gray: space = PT_GRAY
        case .rgb: space = PT_RGB
        case .cmyk: space = PT_CMYK
        }
        return make(
            colorSpace: space, channels: model.channelCount, bytes: bytesPerSample, extra: alpha ? 1 : 0,
            flavor: inverted ? 1 : 0)
    }
}

/// One lcms2 profile handle, closed in `deinit`.
final class LCMSProfile {
    let handle: cmsHPROFILE

    init(handle: cmsHPROFILE) { self.handle = handle }

    /// Opens an ICC profile from bytes (lcms2 copies what it needs).
    convenience init(bytes: [UInt8]) throws(ImageError) {
        guard bytes.count <= Int(UInt32.max),
            let handle = bytes.withUnsafeBytes({ cmsOpenProfileFromMem($0.baseAddress, UInt32($0.count)) })
        else {
            throw ImageError(
                .badImageData, stage: .decode, message: "the ICC profile is not readable",
                underlying: LCMSError(description: "cmsOpenProfileFromMem refused \(bytes.count) bytes"))
        }
        self.init(handle: handle)
    }

    /// sRGB (lcms2's built-in IEC 61966-2.1 profile).
    static func sRGB() -> LCMSProfile { LCMSProfile(handle: cmsCreate_sRGBProfile()) }

    /// Gray with the sRGB tone curve and a D50 white: where gray pixels go.
    static func sRGBGray() -> LCMSProfile {
        let parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        let curve = cmsBuildParametricToneCurve(nil, 4, parameters)
        defer { cmsFreeToneCurve(curve) }
        return LCMSProfile(handle: cmsCreateGrayProfile(cmsD50_xyY(), curve))
    }

    deinit { cmsCloseProfile(handle) }
}

/// One lcms2 transform, deleted in `deinit`.
///
/// Built with `cmsFLAGS_NOCACHE`: without its one-pixel cache a transform is read-only while it runs, so one
/// instance serves every thread at once (lcms2's documented rule for multithreaded use).
final class LCMSTransform: @unchecked Sendable {  // immutable after init; lcms2 transforms without cache are read-only
    private let handle: cmsHTRANSFORM
    let inputFormat: UInt32
    let outputFormat: UInt32

    init(from source: LCMSProfile, inputFormat: UInt32, to target: LCMSProfile, outputFormat: UInt32, intent: UInt32)
        throws(ImageError)
    {
        var flags = UInt32(cmsFLAGS_NOCACHE)
        if inputFormat >> 7 & 7 != 0 { flags |= UInt32(cmsFLAGS_COPY_ALPHA) }
        guard let handle = cmsCreateTransform(source.handle, inputFormat, target.handle, outputFormat, intent, flags)
        else {
            throw ImageError(
                .badImageData, stage: .decode, message: "the ICC profile cannot be converted to sRGB",
                underlying: LCMSError(description: "cmsCreateTransform failed (input format \(inputFormat))"))
        }
        self.handle = handle
        self.inputFormat = inputFormat
        self.outputFormat = outputFormat
    }

    deinit { cmsDeleteTransform(handle) }

    /// Transforms `height` rows of `width` pixels; strides in bytes.
    func run(
        _ input: UnsafeRawPointer, inputStride: Int, _ output: UnsafeMutableRawPointer, outputStride: Int, width: Int,
        height: Int
    ) {
        cmsDoTransformLineStride(
            handle, input, output, UInt32(width), UInt32(height), UInt32(inputStride), UInt32(outputStride), 0, 0)
    }
}
