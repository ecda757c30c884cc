internal import CWebP
import ImageCore

/// A libwebp status (decoder `VP8StatusCode`, encoder `WebPEncodingError` or animation API failure) carried as
/// the cause of an ``ImageError``.
struct WebPLibError: Error, Sendable, CustomStringConvertible {
    /// The numeric status.
    let code: Int
    /// What the status means.
    let message: String

    var description: String { "libwebp \(code): \(message)" }
}

/// The one place libwebp statuses become ``ImageError``s.
enum WebPErrors {
    /// Maps a decoder status to `badImageData`.
    static func decode(_ status: VP8StatusCode, _ context: String) -> ImageError {
        let text: String
        switch status {
        case VP8_STATUS_OUT_OF_MEMORY: text = "out of memory"
        case VP8_STATUS_INVALID_PARAM: text = "invalid parameter"
        case VP8_STATUS_BITSTREAM_ERROR: text = "bitstream error"
        case VP8_STATUS_UNSUPPORTED_FEATURE: text = "unsupported feature"
        case VP8_STATUS_SUSPENDED: text = "suspended"
        case VP8_STATUS_USER_ABORT: text = "aborted"
        case VP8_STATUS_NOT_ENOUGH_DATA: text = "not enough data (truncated)"
        default: text = "status \(status.rawValue)"
        }
        let cause = WebPLibError(code: Int(status.rawValue), message: text)
        return ImageError(.badImageData, stage: .decode, message: "\(context): \(text)", underlying: cause)
    }

    /// A failure the library reports without a status (a NULL demuxer or animation decoder).
    static func malformed(_ message: String) -> ImageError {
        ImageError(
            .badImageData, stage: .decode, message: message, underlying: WebPLibError(code: -1, message: message))
    }

    /// Maps an encoder status to `encodeFailed`.
    static func encode(_ error: WebPEncodingError, _ context: String) -> ImageError {
        let text: String
        switch error {
        case VP8_ENC_ERROR_OUT_OF_MEMORY, VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: text = "out of memory"
        case VP8_ENC_ERROR_NULL_PARAMETER: text = "null parameter"
        case VP8_ENC_ERROR_INVALID_CONFIGURATION: text = "invalid configuration"
        case VP8_ENC_ERROR_BAD_DIMENSION: text = "bad dimension (WebP allows at most 16383 x 16383)"
        case VP8_ENC_ERROR_PARTITION0_OVERFLOW, VP8_ENC_ERROR_PARTITION_OVERFLOW: text = "partition overflow"
        case VP8_ENC_ERROR_BAD_WRITE: text = "write failed"
        case VP8_ENC_ERROR_FILE_TOO_BIG: text = "file too big"
        case VP8_ENC_ERROR_USER_ABORT: text = "aborted"
        default: text = "status \(error.rawValue)"
        }
        let cause = WebPLibError(code: Int(error.rawValue), message: text)
        return ImageError(.encodeFailed, stage: .encode, message: "\(context): \(text)", underlying: cause)
    }

    /// An encode failure described by text (the animation encoder reports strings).
    static func encode(_ message: String) -> ImageError {
        ImageError(
            .encodeFailed, stage: .encode, message: message, underlying: WebPLibError(code: -1, message: message))
    }
}
