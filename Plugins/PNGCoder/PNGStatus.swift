internal import CPNGShim
import ImageCore

/// Why libpng failed, kept as the underlying error of an ``/ImageCore/ImageError``.
public struct PNGLibraryError: Error, Sendable, CustomStringConvertible {
    /// The shim status code (negative) or 0 for a simplified-API failure.
    public let status: Int
    /// libpng's message.
    public let message: String
    /// "libpng: message (status)".
    public var description: String { "libpng: \(message) (status \(status))" }
}

/// The one place where libpng outcomes become ``ImageError``s.
enum PNGStatus {
    /// Maps a shim status and message to an error at `stage`.
    static func error(status: Int32, message: String, stage: ImageError.Stage) -> ImageError {
        let cause = PNGLibraryError(status: Int(status), message: message.isEmpty ? "unknown error" : message)
        let code: ImageError.Code
        switch status {
        case Int32(PNGSHIM_TOO_LARGE): code = .imageTooLarge
        case Int32(PNGSHIM_NO_MEMORY): code = stage == .encode ? .encodeFailed : .imageTooLarge
        default: code = stage == .encode ? .encodeFailed : .badImageData
        }
        return ImageError(code, stage: stage, message: "PNG: \(cause.message)", underlying: cause)
    }

    /// A decode error that is ours, not libpng's (bad signature, truncated header).
    static func badData(_ message: String) -> ImageError {
        ImageError(.badImageData, stage: .decode, message: "PNG: \(message)")
    }
}
