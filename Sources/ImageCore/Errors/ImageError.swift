/// The one error type of the SDK: a stable code, the stage that failed, and the underlying cause.
///
/// Codes are an extensible struct (the pattern of AsyncHTTPClient's `HTTPClientError`): new codes can be added
/// without breaking `switch`-free client code, and plugins can define their own with ``Code/init(_:)``. Compare
/// codes with `==`; read ``underlying`` for the library or system error that caused it. Each code's documentation
/// names the cases that raise it (`ImageErrorCodeTests` triggers every code through the public API).
public struct ImageError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `"badImageData"`.
        public let name: String
        /// Creates a code; plugins may define their own.
        public init(_ name: String) { self.name = name }
        /// The name.
        public var description: String { name }

        /// The URL can't be loaded as written. Raised for a nil, empty or relative URL (``ImageManager``'s loads,
        /// ``ImageTarget/setImage(with:placeholder:options:context:manager:progress:completed:)``), a `data:` URL whose
        /// header or payload is malformed (``DataURLLoader``), and a URL its loader does not serve (HTTPLoader: not
        /// http or https, an empty host). Stage `request`. Permanent: the manager blocks the URL
        /// (``ImageLoaderPolicy/isPermanentFailure(_:)``).
        public static let invalidURL = Code("invalidURL")
        /// The URL is on the manager's failed-URL list, because an earlier load of it failed permanently (see
        /// ``ImageLoaderPolicy/isPermanentFailure(_:)``); nothing was fetched. Load again with
        /// ``ImageOptions/retryFailed``, or clear it with ``ImageManager/removeFailedURL(_:)``. Stage `request`.
        public static let blockedURL = Code("blockedURL")
        /// The bytes claim an image format but can't be decoded: a corrupt, truncated or damaged file of a format a
        /// registered coder recognises, an empty body, a header that declares a zero size, a damaged animation
        /// (APNG sequence errors, say), a frame index out of range (``Image/frame(at:)``), or pixel data that does
        /// not match its geometry (``PixelBuffer``, ``ColorSamples``). HTTPLoader raises it at stage `download`
        /// when the load's decryptor returns nil. A body that is not an image at all (an HTML error page) fails
        /// with ``noCoder`` instead. Stage `decode`. Permanent when the manager's own coders and default budget
        /// judged it.
        public static let badImageData = Code("badImageData")
        /// The image exceeds a budget before the memory or work is spent: the pixel budget
        /// (``ImageDecodeOptions/maxPixelCount``, checked from the header, also on a download's first bytes), the
        /// animation budgets (``AnimationBudget``: frame count, frames × pixels, decoding work), a thumbnail scaled
        /// up past the budget, or a transformer's output over its limit (stage `transform`). Stage `decode`
        /// otherwise. Permanent when the manager's default budget judged it.
        public static let imageTooLarge = Code("imageTooLarge")
        /// A loader's answer to a revalidation (HTTP 304 to `If-None-Match` / `If-Modified-Since`): the cached copy
        /// is current. A caller of a loader sees it as a failure (``statusCode`` 304); a load through
        /// ``ImageManager`` with ``ImageOptions/refreshCached`` ends instead with the cached image and
        /// ``ImageResult/isNotModified``. Stage `download`.
        public static let cacheNotModified = Code("cacheNotModified")
        /// The load was cancelled: its operation's `cancel()`, the cancelled `Task` of an `async` load, a new load on
        /// the same ``ImageTarget`` or the target's release, ``ImageManager/cancelAll()``, a cancelled cache query
        /// (``CacheQueryOperation``), or a loader that was shut down or cancelled its downloads. Any stage.
        public static let cancelled = Code("cancelled")
        /// The server answered with a status outside the accepted ones (HTTPLoader: any 2xx by default); the status
        /// is in ``ImageError/statusCode`` and the response in ``ImageError/response``. 404 and 410 are permanent,
        /// other statuses transient. Stage `download`.
        public static let invalidDownloadStatusCode = Code("invalidDownloadStatusCode")
        /// The server answered with a content type outside the loader's accepted ones (HTTPLoader's
        /// `acceptableContentTypes`, when set). Stage `download`.
        public static let invalidDownloadContentType = Code("invalidDownloadContentType")
        /// The response can't be used: a response modifier returned nil, a redirect loop or too many redirects, a
        /// redirect without a usable `Location`, or no response head at all; a data load whose loader delivered no
        /// bytes (an image it made itself, or an empty body). Stage `download`.
        public static let invalidDownloadResponse = Code("invalidDownloadResponse")
        /// The body is larger than the loader's limit: HTTPLoader's `maximumResponseSize` (from `Content-Length`
        /// or as bytes arrive), ``FileLoader``'s maximum file size. Stage `download`.
        public static let downloadTooLarge = Code("downloadTooLarge")
        /// The transfer failed: a refused or reset connection, DNS or TLS failure, a body shorter than its
        /// `Content-Length`; for ``FileLoader`` a file that is missing, outside its root or not a regular file, or
        /// a read error. Transient: never blocks the URL. Stage `download`.
        public static let downloadFailed = Code("downloadFailed")
        /// The transfer ran out of time: the connect or idle timeout, the whole-transfer deadline, or a rate under
        /// the loader's minimum (HTTPLoader), stage `download`; or the load's own deadline passed
        /// (``ImageContext/loadTimeout``), stage `request`, whatever it was doing. Transient.
        public static let timedOut = Code("timedOut")
        /// No registered coder takes the bytes or the format: a body that no coder recognises (not an image, or a
        /// format whose coder is not registered), an animation without an animated coder, or an encode to a
        /// format no coder writes (stage `encode`). Stage `decode` otherwise. Permanent when the manager's own
        /// coders judged it.
        public static let noCoder = Code("noCoder")
        /// No loader accepts the URL: none of the loaders (``LoadersManager``, or the manager's loader) answers
        /// `canRequestImage(for:)` with true, say an `https` URL with no HTTP loader registered. Stage `download`.
        public static let noLoader = Code("noLoader")
        /// A cache failed to store or read: a disk entry over the entry size limit, a full write backlog, extended
        /// data over its limit, an I/O error. The manager logs store failures and never fails a load with them; a
        /// caller of a cache sees them. Stage `cacheStore` (or `cacheQuery` for a read).
        public static let cacheFailure = Code("cacheFailure")
        /// A transformer threw an error that is not an ``ImageError``; it is in ``ImageError/underlying`` and the
        /// message is the transformer's key. (A transformer that throws an ``ImageError`` keeps its code.) Stage
        /// `transform`.
        public static let transformFailed = Code("transformFailed")
        /// A coder could not encode the image: a size over the format's limit, an empty image, a library failure;
        /// ``CodersManager/encode(_:as:options:)`` wraps any other error of a coder in this code. Stage `encode`.
        public static let encodeFailed = Code("encodeFailed")
        /// The image was not in the cache and the load may not download it: ``ImageOptions/fromCacheOnly`` (stage
        /// `cacheQuery`), or the delegate's
        /// ``ImageManagerDelegate/imageManager(_:shouldDownloadImageFor:)`` returned false (stage `download`).
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
