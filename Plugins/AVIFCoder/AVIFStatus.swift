internal import CAVIF
import ImageCore

/// A libavif status (`avifResult`) and the decoder's or encoder's diagnostic text, carried as the cause of an
/// ``/ImageCore/ImageError``.
public struct AVIFLibError: Error, Sendable, CustomStringConvertible {
    /// The numeric `avifResult`; -1 for failures libavif reports without a status (a NULL handle).
    public let code: Int
    /// `avifResultToString` of the status.
    public let result: String
    /// libavif's diagnostic message (`avifDiagnostics.error`), empty when it gave none.
    public let detail: String

    /// "libavif N (result): detail".
    public var description: String {
        detail.isEmpty ? "libavif \(code) (\(result))" : "libavif \(code) (\(result)): \(detail)"
    }
}

/// The one place libavif statuses become ``ImageError``s.
enum AVIFStatus {
    /// Maps a decoder status to `badImageData`, or to `imageTooLarge` when libavif refused the file because of a
    /// limit the coder set from the SDK's budget (its size, dimension or image-count limit).
    static func decode(_ result: avifResult, diagnostics: String, _ context: String) -> ImageError {
        let cause = error(result, diagnostics)
        if isLimit(cause.detail) {
            return ImageError(
                .imageTooLarge, stage: .decode, message: "\(context): over the decode budget", underlying: cause)
        }
        if result == AVIF_RESULT_NO_CODEC_AVAILABLE {
            return ImageError(
                .noCoder, stage: .decode, message: "\(context): this libavif has no AV1 decoder", underlying: cause)
        }
        return ImageError(.badImageData, stage: .decode, message: "\(context): \(cause.result)", underlying: cause)
    }

    /// Maps an encoder status to `encodeFailed`.
    static func encode(_ result: avifResult, diagnostics: String, _ context: String) -> ImageError {
        let cause = error(result, diagnostics)
        let text = result == AVIF_RESULT_NO_CODEC_AVAILABLE ? "this libavif has no AV1 encoder" : cause.result
        return ImageError(.encodeFailed, stage: .encode, message: "\(context): \(text)", underlying: cause)
    }

    /// A failure libavif reports without a status (a NULL decoder, encoder or image).
    static func missing(_ what: String, stage: ImageError.Stage) -> ImageError {
        let cause = AVIFLibError(code: -1, result: "NULL", detail: what)
        let code: ImageError.Code = stage == .encode ? .encodeFailed : .badImageData
        return ImageError(code, stage: stage, message: what, underlying: cause)
    }

    private static func error(_ result: avifResult, _ diagnostics: String) -> AVIFLibError {
        let text = avifResultToString(result).map { String(cString: $0) } ?? "unknown"
        return AVIFLibError(code: Int(result.rawValue), result: text, detail: diagnostics)
    }

    /// libavif 0.11 reports its limits only in the diagnostic text, with a generic parse-failure status:
    /// "Item ID [n] dimensions are too large", "Exceeded avifDecoder's imageCountLimit", and the dav1d frame
    /// size limit. The coder checks its budget from its own header walk first; this is the second line.
    private static func isLimit(_ detail: String) -> Bool {
        detail.contains("dimensions are too large") || detail.contains("imageCountLimit")
            || detail.contains("imageSizeLimit") || detail.contains("too many pixels")
    }
}

extension avifDiagnostics {
    /// The error text as a Swift string.
    var message: String {
        var copy = error
        return withUnsafeBytes(of: &copy) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
