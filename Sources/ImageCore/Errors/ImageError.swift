/// The one error type of the SDK: a stable code, the stage that failed, and the underlying cause.
///
/// Codes are an extensible struct (the pattern of AsyncHTTPClient's `HTTPClientError`): new codes can be added
/// without breaking `switch`-free client code, and plugins can define their own with ``Code/init(_:)``. Compare
/// codes with `==`; read ``underlying`` for the library or system error that caused it.
public struct ImageError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `"badImageData"`.
        public let name: String
        /// Creates a code; plugins may define their own.
        public init(_ name: String) { self.name = name }
        /// The name.
        public var description: String { name }

        /// The URL is nil, empty or not a URL.
        public static let invalidURL = Code("invalidURL")
        /// The URL is on the failed-URL list (retry with ``ImageOptions/retryFailed``).
        public static let blockedURL = Code("blockedURL")
        /// The bytes are not a decodable image (corrupt, truncated, empty, unknown format).
        public static let badImageData = Code("badImageData")
        /// The image exceeds the pixel or memory budget (decompression bomb guard).
        public static let imageTooLarge = Code("imageTooLarge")
        /// Revalidation found the cached copy current (HTTP 304); not a failure of the load.
        public static let cacheNotModified = Code("cacheNotModified")
        /// The load was cancelled.
        public static let cancelled = Code("cancelled")
        /// The server answered with a status code outside the acceptable range; see ``ImageError/statusCode``.
        public static let invalidDownloadStatusCode = Code("invalidDownloadStatusCode")
        /// The server answered with a content type that is not acceptable.
        public static let invalidDownloadContentType = Code("invalidDownloadContentType")
        /// The response is malformed or a response modifier refused it.
        public static let invalidDownloadResponse = Code("invalidDownloadResponse")
        /// The response exceeds the maximum size.
        public static let downloadTooLarge = Code("downloadTooLarge")
        /// The transfer failed: connection, DNS, TLS, reset or truncation.
        public static let downloadFailed = Code("downloadFailed")
        /// The transfer timed out.
        public static let timedOut = Code("timedOut")
        /// No registered coder can decode or encode the format.
        public static let noCoder = Code("noCoder")
        /// No loader accepts the URL, or the delegate / options forbid downloading.
        public static let noLoader = Code("noLoader")
        /// A cache failed to read or write.
        public static let cacheFailure = Code("cacheFailure")
        /// A transformer failed.
        public static let transformFailed = Code("transformFailed")
        /// Encoding failed.
        public static let encodeFailed = Code("encodeFailed")
        /// The image was not in the cache and the options forbade downloading it.
        public static let cacheMiss = Code("cacheMiss")
    }

    /// The stage of the main line that failed.
    public enum Stage: String, Hashable, Sendable {
        /// Validating the URL or the failed-URL list.
        case request
        /// Reading a cache.
        case cacheQuery
        /// Loading bytes (network, file, data URL).
        case download
        /// Decoding bytes into pixels.
        case decode
        /// Applying a transformer.
        case transform
        /// Encoding pixels into bytes.
        case encode
        /// Writing a cache.
        case cacheStore
    }

    /// The stable code.
    public let code: Code
    /// The stage that failed.
    public let stage: Stage
    /// A human-readable detail, if any.
    public let message: String?
    /// The HTTP status for ``Code/invalidDownloadStatusCode`` (and a 304 for ``Code/cacheNotModified``).
    public let statusCode: Int?
    /// The error that caused this one: a C library status, a POSIX error, an HTTP client error.
    public let underlying: (any Error & Sendable)?
    /// Boxed, so the error stays small: a response is rare and typed throws pass the error by value.
    private var responseBox: ResponseBox?

    /// The response the loader got before the load failed (status and headers), so a caller can log why it was
    /// refused; nil when the failure came before any response (connection, DNS, TLS) or from another stage.
    public var response: ResponseMetadata? {
        get { responseBox?.response }
        set { responseBox = newValue.map(ResponseBox.init) }
    }

    /// This error carrying `response`, unless it already carries one.
    public func attaching(response: ResponseMetadata?) -> ImageError {
        guard responseBox == nil, let response else { return self }
        var copy = self
        copy.response = response
        return copy
    }

    /// Creates an error.
    public init(
        _ code: Code, stage: Stage, message: String? = nil, statusCode: Int? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.stage = stage
        self.message = message
        self.statusCode = statusCode
        self.underlying = underlying
    }

    /// `invalidURL` at the request stage.
    public static func invalidURL(_ message: String? = nil) -> ImageError {
        ImageError(.invalidURL, stage: .request, message: message)
    }

    /// `cancelled` at the given stage.
    public static func cancelled(stage: Stage = .request) -> ImageError { ImageError(.cancelled, stage: stage) }

    /// `invalidDownloadStatusCode` carrying the status.
    public static func invalidDownloadStatusCode(_ status: Int) -> ImageError {
        ImageError(.invalidDownloadStatusCode, stage: .download, message: "HTTP status \(status)", statusCode: status)
    }

    /// `cacheFailure` wrapping the cause.
    public static func cacheFailure(_ underlying: any Error & Sendable, stage: Stage = .cacheStore) -> ImageError {
        ImageError(.cacheFailure, stage: stage, underlying: underlying)
    }

    /// True when this error is a cancellation.
    public var isCancellation: Bool { code == .cancelled }

    /// "stage: code (message) [underlying]".
    public var description: String {
        var text = "ImageError.\(code) at \(stage.rawValue)"
        if let message { text += ": \(message)" }
        if let underlying { text += " [caused by \(underlying)]" }
        return text
    }
}

extension ImageError {
    /// Wraps any error as an ``ImageError`` of the given code and stage, keeping an ``ImageError`` as it is.
    public static func wrap(_ error: any Error, as code: Code, stage: Stage) -> ImageError {
        if let imageError = error as? ImageError { return imageError }
        if error is CancellationError { return .cancelled(stage: stage) }
        return ImageError(code, stage: stage, underlying: SendableErrorBox(error))
    }
}

/// The immutable box of ``ImageError/response``.
private final class ResponseBox: Sendable {
    let response: ResponseMetadata
    init(_ response: ResponseMetadata) { self.response = response }
}

/// Carries a non-`Sendable` error's description across threads.
public struct SendableErrorBox: Error, Sendable, CustomStringConvertible {
    /// The wrapped error's description.
    public let description: String
    /// The wrapped error's type name.
    public let typeName: String

    /// Captures `error`'s description and type.
    public init(_ error: any Error) {
        self.description = String(describing: error)
        self.typeName = String(reflecting: type(of: error))
    }
}
