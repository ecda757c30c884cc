internal import CGIF
import ImageCore

/// A giflib status code with giflib's own text, carried as the cause of an ``ImageError``.
struct GIFLibError: Error, Sendable, CustomStringConvertible {
    /// The `D_GIF_ERR_*` / `E_GIF_ERR_*` code.
    let code: Int32
    /// `GifErrorString(code)`.
    let message: String

    init(code: Int32) {
        self.code = code
        self.message = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
    }

    var description: String { "giflib \(code): \(message)" }
}

/// The one place giflib statuses become ``ImageError``s.
enum GIFErrors {
    /// A decode failure: `badImageData` with giflib's code and text as the cause.
    static func decode(_ code: Int32, _ context: String) -> ImageError {
        let cause = GIFLibError(code: code)
        return ImageError(.badImageData, stage: .decode, message: "\(context): \(cause.message)", underlying: cause)
    }

    /// A structural problem giflib does not report itself (zero-size frame, no frames).
    static func malformed(_ message: String) -> ImageError {
        ImageError(.badImageData, stage: .decode, message: message)
    }

    /// An encode failure: `encodeFailed` with giflib's code and text as the cause.
    static func encode(_ code: Int32, _ context: String) -> ImageError {
        let cause = GIFLibError(code: code)
        return ImageError(.encodeFailed, stage: .encode, message: "\(context): \(cause.message)", underlying: cause)
    }
}
