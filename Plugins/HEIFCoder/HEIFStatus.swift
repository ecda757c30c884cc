internal import CHEIF
import ImageCore

/// A libheif error (`heif_error`), carried as the cause of an ``/ImageCore/ImageError``.
public struct HEIFLibError: Error, Sendable, CustomStringConvertible {
    /// `heif_error_code`.
    public let code: Int
    /// `heif_suberror_code`.
    public let subcode: Int
    /// libheif's message.
    public let message: String

    /// "libheif code/subcode: message".
    public var description: String { "libheif \(code)/\(subcode): \(message)" }
}

/// The one place `heif_error`s become ``ImageError``s.
enum HEIFStatus {
    /// Throws unless `error` is `heif_error_Ok`: `imageTooLarge` for libheif's security limits, `encodeFailed`
    /// at the encode stage, `badImageData` otherwise.
    static func check(_ error: heif_error, stage: ImageError.Stage, _ context: String) throws(ImageError) {
        guard error.code != heif_error_Ok else { return }
        let cause = HEIFLibError(
            code: Int(error.code.rawValue), subcode: Int(error.subcode.rawValue),
            message: error.message.map { String(cString: $0) } ?? "")
        if stage == .encode {
            throw ImageError(.encodeFailed, stage: .encode, message: "\(context): \(cause.message)", underlying: cause)
        }
        if error.code == heif_error_Memory_allocation_error && error.subcode == heif_suberror_Security_limit_exceeded {
            throw ImageError(
                .imageTooLarge, stage: stage, message: "\(context): over libheif's limits", underlying: cause)
        }
        throw ImageError(.badImageData, stage: stage, message: "\(context): \(cause.message)", underlying: cause)
    }

    /// A failure libheif reports with a NULL result rather than a status.
    static func missing(_ what: String, stage: ImageError.Stage) -> ImageError {
        let cause = HEIFLibError(code: -1, subcode: 0, message: what)
        return ImageError(
            stage == .encode ? .encodeFailed : .badImageData, stage: stage, message: "HEIF: \(what)",
            underlying: cause)
    }
}

/// libheif's one-time initialisation (its plugin registry), done once per process before any other call;
/// never undone, since contexts may be alive on other threads until the process ends.
enum HEIFLibrary {
    static let initialized: Bool = heif_init(nil).code == heif_error_Ok
}

/// Owns one `heif_context`.
final class HEIFContext {
    let pointer: OpaquePointer

    init(stage: ImageError.Stage) throws(ImageError) {
        _ = HEIFLibrary.initialized
        guard let pointer = heif_context_alloc() else { throw HEIFStatus.missing("heif_context_alloc", stage: stage) }
        self.pointer = pointer
    }

    deinit { heif_context_free(pointer) }
}

/// Owns one `heif_image_handle`.
final class HEIFImageHandle {
    let pointer: OpaquePointer

    init(pointer: OpaquePointer) { self.pointer = pointer }

    deinit { heif_image_handle_release(pointer) }
}

/// Owns one decoded or to-be-encoded `heif_image`.
final class HEIFImage {
    let pointer: OpaquePointer

    init(pointer: OpaquePointer) { self.pointer = pointer }

    deinit { heif_image_release(pointer) }
}
