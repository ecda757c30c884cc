import Foundation

/// Loads the bytes of an image: over HTTP, from a file, from a `data:` URL, from anything a plugin knows.
///
/// A loader delivers bytes plus response metadata (status, content type, validators); decoding, decode
/// coalescing and progressive previews happen once, in the core, so every loader gets them. A loader may also
/// hand back an image it produced itself (``LoadedImageData/image``).
///
/// Threading: `requestImage` is called on the thread that starts the load and must return quickly; the loader
/// calls `progress` and `completion` from its own threads (never holding a lock), `completion` exactly once.
/// After the returned operation is cancelled the loader completes with ``ImageError/Code/cancelled`` as soon as
/// it can. When the manager revalidates an entry (the options hold a flag of ``ImageOptions/revalidating``), the
/// context carries ``ImageContext/loaderCachedImage`` and ``ImageContext/loaderCachedMetadata``; a loader that finds
/// the copy current completes with ``ImageError/Code/cacheNotModified``, carrying the 304's response
/// (``ImageError/response``) when it has one: its `max-age` renews a `.refreshStale` entry.
public protocol ImageLoader: Sendable {
    /// True when this loader handles `url` (scheme, host …).
    func canRequestImage(for url: URL) -> Bool
    /// Starts loading `url`.
    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext,
        progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation
    /// Whether `error` means the URL itself is bad, so the manager should put it on the failed-URL list.
    func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool
    /// Whether the request this loader would send for `url` carries the caller's credentials (an
    /// `Authorization` header, cookies, client credentials from its configuration).
    ///
    /// The manager never shares such a load's download or cache entries with other callers unless the context
    /// names a ``ImageContextOption/cachePartitionKey``. A request modifier in the context makes a load private
    /// whatever this returns. Called on the thread that starts the load; must be fast. Default: false.
    func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool
    /// What in `options` and `context` changes the transfer this loader would make for `url` — a deadline, a
    /// header, a client setting — as a string; loads whose strings differ never share a download.
    ///
    /// The manager appends it to the key of the download it shares between identical loads, so a load with a
    /// 1-second deadline never waits on (or cuts short) a load with the default one. Called on the thread that
    /// starts the load; must be fast. Default: "" (nothing in the context changes this loader's transfer).
    func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String
    /// The registry through which this loader's downloads of `url` are cancelled (its `cancelAllDownloads()` and
    /// `cancelDownloads(for:)`), or nil when the loader offers no such control.
    ///
    /// A manager registers each of its download jobs for `url` there, and the admission place each waits for, so a
    /// cancel ends them together with the loader's transfers and a load made after the cancel returned starts a new
    /// download (see ``DownloadControl``). Called on the thread that starts a download; must be fast. Default: nil.
    func downloadControl(for url: URL) -> DownloadControl?
}

extension ImageLoader {
    /// The SDK's policy (DESIGN §6): block only for errors that say the URL is bad — undecodable data, HTTP 404
    /// or 410, an invalid URL — never for timeouts, connection, DNS or TLS failures, 5xx, or cancellation.
    public func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool {
        ImageLoaderPolicy.isPermanentFailure(error)
    }

    /// Default: nothing in the context changes the transfer.
    public func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String { "" }

    /// Default: no cancel control.
    public func downloadControl(for url: URL) -> DownloadControl? { nil }

    /// Default: the loader adds no credentials of its own.
    public func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        false
    }
}

/// The failed-URL policy shared by loaders and the manager.
public enum ImageLoaderPolicy {
    /// True for errors that say the URL is bad: `invalidURL`, `badImageData`, `noCoder`, `imageTooLarge`
    /// (a decompression bomb stays one), HTTP 404 / 410.
    public static func isPermanentFailure(_ error: ImageError) -> Bool {
        switch error.code {
        case .invalidURL, .badImageData, .noCoder, .imageTooLarge: return true
        case .invalidDownloadStatusCode: return error.statusCode == 404 || error.statusCode == 410
        default: return false
        }
    }
}

/// Progress of a load.
public struct LoadProgress: Sendable {
    /// Bytes received so far.
    public var receivedBytes: Int
    /// Bytes expected in all, when the loader knows (Content-Length).
    public var expectedBytes: Int?
    /// Every byte received so far, only for ``ImageOptions/progressiveLoad`` loads (for incremental decoding).
    public var partialData: Data?

    /// Creates a progress report.
    public init(receivedBytes: Int, expectedBytes: Int?, partialData: Data? = nil) {
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
        self.partialData = partialData
    }
}

/// The result of a load: bytes, response metadata and optionally an image the loader made itself.
public struct LoadedImageData: Sendable {
    /// The image bytes (after any decryptor).
    public var data: Data
    /// The response.
    public var response: ResponseMetadata
    /// An image the loader produced itself; the core skips decoding when present.
    public var image: Image?

    /// Creates a result.
    public init(data: Data, response: ResponseMetadata = ResponseMetadata(), image: Image? = nil) {
        self.data = data
        self.response = response
        self.image = image
    }
}
