internal import CJPEG
import ImageCore

/// Why libjpeg-turbo failed, kept as the underlying error of an ``/ImageCore/ImageError``.
public struct JPEGLibraryError: Error, Sendable, CustomStringConvertible {
    /// TurboJPEG's message (`tjGetErrorStr2`).
    public let message: String
    /// "libjpeg-turbo: message".
    public var description: String { "libjpeg-turbo: \(message)" }
}

/// Header facts from `tjDecompressHeader3`.
struct JPEGHeader {
    var width: Int
    var height: Int
    var subsampling: Int32
    var colorspace: Int32

    var isGray: Bool { colorspace == Int32(TJCS_GRAY.rawValue) }
    var isCMYK: Bool { colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue) }
}

/// Owns one TurboJPEG handle (decompressor or compressor) and destroys it in `deinit`.
///
/// TurboJPEG reports errors by return value (its own setjmp is internal to the library), so no longjmp reaches
/// Swift. A handle is not thread-safe: each decode or encode creates its own.
final class TurboJPEG {
    let handle: tjhandle

    /// A decompressor, or `badImageData`/`encodeFailed` when TurboJPEG cannot allocate one.
    static func decompressor() throws(ImageError) -> TurboJPEG {
        guard let handle = tjInitDecompress() else {
            throw ImageError(.badImageData, stage: .decode, message: "JPEG: tjInitDecompress failed")
        }
        return TurboJPEG(handle)
    }

    /// A compressor.
    static func compressor() throws(ImageError) -> TurboJPEG {
        guard let handle = tjInitCompress() else {
            throw ImageError(.encodeFailed, stage: .encode, message: "JPEG: tjInitCompress failed")
        }
        return TurboJPEG(handle)
    }

    private init(_ handle: tjhandle) { self.handle = handle }

    deinit { tjDestroy(handle) }

    /// True when the last failure was only a libjpeg warning (e.g. premature end of data): the output is usable.
    ///
    /// TurboJPEG 2.1 reports `TJERR_WARNING` whenever *any* warning happened, even when a fatal error followed
    /// (e.g. "found marker 0xf7 instead of RST0" then "Unsupported marker type 0xf7"). The message is the last one
    /// libjpeg emitted, so the failure is a warning only when that message is one of libjpeg's warning texts
    /// (`JWRN_*` in jerror.h, stable since libjpeg 6b).
    var lastFailureWasWarning: Bool {
        guard tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) else { return false }
        let text = tjGetErrorStr2(handle).map { String(cString: $0) } ?? ""
        return Self.warningPrefixes.contains { text.hasPrefix($0) }
    }

    /// Fixed prefixes of libjpeg's warning messages (JWRN_*).
    private static let warningPrefixes = [
        "Corrupt JPEG data", "Premature end of JPEG file", "Invalid SOS parameters for sequential JPEG",
        "Inconsistent progression sequence", "Warning: unknown JFIF revision", "Unknown Adobe color transform",
        "Application transferred too many scanlines",
    ]

    /// The one place where a TurboJPEG failure becomes an ``ImageError``.
    func error(stage: ImageError.Stage) -> ImageError {
        let text = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
        let cause = JPEGLibraryError(message: text)
        return ImageError(
            stage == .encode ? .encodeFailed : .badImageData, stage: stage, message: "JPEG: \(text)",
            underlying: cause)
    }

    /// Reads the header (size, subsampling, colour space).
    func header(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> JPEGHeader {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else {
            throw ImageError(.badImageData, stage: .decode, message: "JPEG: empty data")
        }
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colorspace: Int32 = 0
        if tjDecompressHeader3(handle, base, UInt(bytes.count), &width, &height, &subsampling, &colorspace) != 0 {
            // TurboJPEG 2.1 fails the header call for subsamplings it has no TJSAMP for (4:1:0, 4:4:1, ...) although
            // libjpeg read the header and tjDecompress2 decodes them; the outputs are filled before that check.
            let text = tjGetErrorStr2(handle).map { String(cString: $0) } ?? ""
            let unknownSubsampling = text.contains("Could not determine subsampling type")
            guard lastFailureWasWarning || unknownSubsampling, width > 0, height > 0,
                (0...4).contains(colorspace)
            else { throw error(stage: .decode) }
        }
        // A tables-only stream (e.g. just SOI, or SOI + DQT + EOI) "succeeds" with no frame.
        guard width > 0, height > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "JPEG: the datastream contains no image")
        }
        return JPEGHeader(
            width: Int(width), height: Int(height), subsampling: subsampling, colorspace: colorspace)
    }
}
