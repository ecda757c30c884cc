internal import CJXL
import ImageCore

/// What libjxl said when it failed, carried as the cause of an ``/ImageCore/ImageError``.
///
/// libjxl 0.7 reports failures as a bare status (`JXL_DEC_ERROR`, `JXL_ENC_ERROR` with a `JxlEncoderError` code);
/// its detailed reason only goes to standard error, so ``detail`` is what the coder knew at that point.
public struct JXLLibError: Error, Sendable, CustomStringConvertible {
    /// The libjxl status (`JxlDecoderStatus` or `JxlEncoderStatus`) as a number.
    public let status: Int
    /// The encoder's `JxlEncoderError` code, or 0.
    public let encoderError: Int
    /// What the coder was doing.
    public let detail: String

    /// "libjxl status N: detail".
    public var description: String {
        encoderError == 0
            ? "libjxl status \(status): \(detail)"
            : "libjxl status \(status) (encoder error \(encoderError)): \(detail)"
    }
}

/// The one place where libjxl outcomes become ``ImageError``s.
enum JXLStatus {
    /// A decoder failure (`JXL_DEC_ERROR`, or input that ended too early) as `badImageData`.
    static func decode(_ status: JxlDecoderStatus, _ detail: String) -> ImageError {
        let cause = JXLLibError(status: Int(status.rawValue), encoderError: 0, detail: detail)
        return ImageError(.badImageData, stage: .decode, message: "JPEG XL: \(detail)", underlying: cause)
    }

    /// An encoder failure as `encodeFailed`.
    static func encode(_ status: JxlEncoderStatus, error: JxlEncoderError, _ detail: String) -> ImageError {
        let cause = JXLLibError(status: Int(status.rawValue), encoderError: Int(error.rawValue), detail: detail)
        return ImageError(.encodeFailed, stage: .encode, message: "JPEG XL: \(detail)", underlying: cause)
    }

    /// A decode error that is ours, not libjxl's (no signature, a frame over the budget's limits …).
    static func badData(_ message: String) -> ImageError {
        ImageError(.badImageData, stage: .decode, message: "JPEG XL: \(message)")
    }
}
