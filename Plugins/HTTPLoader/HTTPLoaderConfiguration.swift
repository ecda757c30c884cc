import Dispatch
import Foundation
import ImageCore
import Logging
import Metrics

/// Everything an ``HTTPLoader`` is built with; a value, copied into the loader at `init`.
///
/// Defaults suit a server: 6 concurrent downloads, 15 s connect and read (idle) timeouts, 60 s for a whole
/// transfer, at least 16 KiB per 10 s once a transfer is 10 s old, FIFO, at most 5 redirects (each hop checked
/// by ``redirectFilter``), 64 MiB per response, TLS verification on, no retry. Headers can still be changed on a
/// live loader with ``HTTPLoader/setValue(_:forHTTPHeaderField:)``.
///
/// Limits that keep a hostile server from holding a download slot: the idle ``timeout`` ends a silent
/// connection, ``maximumTransferDuration`` ends any transfer (per request:
/// ``ImageCore/ImageContext/httpTransferTimeout`` or ``/ImageCore/ImageRequest/timeout``), ``minimumTransferRate`` ends
/// one that drips bytes just often enough to stay under the idle timeout. All three fail with `timedOut`, which never
/// blocks the URL.
public struct HTTPLoaderConfiguration: Sendable {
    /// How many transfers run at once; the rest wait in the loader's own queue (default 6).
    public var maxConcurrentDownloads: Int = 6
    /// Connect timeout and read (idle) timeout, seconds (default 15).
    public var timeout: Double = 15
    /// The longest one transfer may take, seconds (default 60): from sending the request to the last body byte,
    /// redirects and retries included, time spent in the loader's queue excluded. A request overrides it with
    /// ``ImageCore/ImageContext/httpTransferTimeout`` or, in a request modifier, ``/ImageCore/ImageRequest/timeout``
    /// (which wins). `.infinity` disables it. Exceeding it fails with `timedOut`.
    public var maximumTransferDuration: Double = 60
    /// The slowest transfer tolerated (default 16 KiB in every 10 s once the transfer is 10 s old); nil disables.
    /// A slower transfer fails with `timedOut` and gives its slot to the next queued download.
    public var minimumTransferRate: HTTPTransferRate? = HTTPTransferRate(bytes: 16 * 1024, seconds: 10)
    /// Which queued transfer of equal priority starts next (default FIFO).
    public var executionOrder: DownloadExecutionOrder = .fifo
    /// The image formats listed in the default `Accept` header, most preferred first.
    ///
    /// Coders only answer `canDecode(Data)`, so the loader cannot ask ``/ImageCore/CodersManager`` which MIME types it
    /// decodes; list here the formats whose coders you register. `image/*;q=0.8` is appended so servers that
    /// only have other formats still answer (the core then fails with `noCoder` if nothing decodes them).
    public var acceptedFormats: [ImageFormat] = [.webp, .png, .jpeg, .gif]
    /// Extra default headers sent with every request (they override the built-in `User-Agent` / `Accept`).
    public var headers: [(name: String, value: String)] = []
    /// `Authorization: Basic` credentials sent with every request, if set.
    public var credentials: (user: String, password: String)?
    /// Rewrites every request before the per-request modifier of the context; nil cancels the load.
    public var requestModifier: (any RequestModifier)?
    /// Vets every response before the per-request modifier of the context; nil fails with `invalidDownloadResponse`.
    public var responseModifier: (any ResponseModifier)?
    /// Turns the bytes of every download into image bytes (when the context names no decryptor).
    public var decryptor: (any DownloadDecryptor)?
    /// Status codes that count as success (default 200..<300). 304 is always handled as "not modified". A 206 counts
    /// only when its `Content-Range` is the whole representation (the loader never asks for a part): any other is
    /// `invalidDownloadResponse`, so a part is never delivered or cached as the image.
    public var acceptableStatusCodes: Set<Int> = Set(200..<300)
    /// If set, the only content types accepted (`image/png`, or a wildcard such as `image/*`); others fail with
    /// `invalidDownloadContentType`. A response without a content type passes.
    public var acceptableContentTypes: Set<String>?
    /// The largest response body accepted, checked against Content-Length and while streaming (default 64 MiB).
    public var maximumResponseSize: Int = 64 << 20
    /// Redirects followed before failing (default 5; 0 disables following). Cycles always fail.
    ///
    /// The loader follows redirects itself (AsyncHTTPClient's following is off) so each hop is checked before it
    /// is sent: only `http`/`https` targets; 301/302 turn POST into GET and 303 anything but HEAD into GET;
    /// `Authorization`, `Proxy-Authorization` and `Cookie` are dropped when a hop leaves the origin (scheme, host,
    /// port), as browsers do; with ``/ImageCore/ImageOptions/handleCookies`` each hop gets the jar's cookies for its
    /// URL.
    public var maximumRedirects: Int = 5
    /// Decides every redirect hop before it is sent: `from` is the URL that answered with the redirect, `to` the
    /// resolved target. Returning false fails the load with ``ImageCore/ImageError/Code/redirectRefused`` (stage
    /// `download`); the target is never contacted. Called on a NIO event loop, without locks: keep it fast and
    /// non-blocking. Nil (the default) allows every hop that the rules of ``maximumRedirects`` allow.
    public var redirectFilter: (@Sendable (_ from: URL, _ to: URL) -> Bool)?
    /// Retries for 5xx answers and connection failures; nil (the default) never retries.
    public var retry: HTTPRetryPolicy?
    /// Where the loader logs (debug for each transfer, warning for failures other than cancellation).
    public var logger = Logger(label: "webimage.httploader")
    /// The metrics backend; nil uses the process-wide `MetricsSystem` factory.
    public var metricsFactory: (any MetricsFactory)?
    /// Prefix of every metric label (default `webimage_http`).
    public var metricsPrefix = "webimage_http"
    /// Minimum bytes between two progress reports of one transfer (default 64 KiB).
    public var progressByteInterval = 64 * 1024
    /// Minimum seconds between two progress reports of one transfer (default 0.05).
    public var progressTimeInterval: Double = 0.05
    /// Idle keep-alive connections are closed after this many seconds (default 60).
    public var connectionIdleTimeout: Double = 60
    /// Where progress and completion callbacks run; nil (the default) runs them on the NIO event loop that
    /// received the response, without a thread hop (keep them short: the image manager only hands the bytes to its
    /// decode pool there). Set a queue when callbacks may block; a transfer's callbacks still run one at a time
    /// and in order.
    public var callbackQueue: DispatchQueue?
    /// AsyncHTTPClient retries failed connection attempts with back-off until the connect timeout, then fails
    /// with the last connection error (default true, AHC's recommendation); false fails such loads at once.
    public var retryConnectionEstablishment = true

    /// The default configuration.
    public init() {}

    /// The `Accept` value for ``acceptedFormats``, e.g. `image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8`.
    public var acceptHeader: String {
        var types: [String] = []
        for format in acceptedFormats {
            if let mime = format.mimeType, !types.contains(mime) { types.append(mime) }
        }
        types.append("image/*;q=0.8")
        return types.joined(separator: ",")
    }

    /// `<process name> WebImage-HTTPLoader/1 (<OS>; <OS version>)`: names the process, as servers' logs want.
    public static var defaultUserAgent: String {
        let info = ProcessInfo.processInfo
        #if os(Linux)
            let system = "Linux"
        #else
            let system = "Darwin"
        #endif
        return "\(info.processName) WebImage-HTTPLoader/1 (\(system); \(info.operatingSystemVersionString))"
    }

    /// The default headers in sending order: User-Agent, Accept, Authorization (with ``credentials``), then
    /// ``headers`` (which replace built-in fields of the same name).
    var defaultHeaders: [(name: String, value: String)] {
        var request = ImageRequest(url: URL(fileURLWithPath: "/"))
        request[header: "User-Agent"] = Self.defaultUserAgent
        request[header: "Accept"] = acceptHeader
        if let credentials {
            let token = Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
            request[header: "Authorization"] = "Basic \(token)"
        }
        for (name, value) in headers { request[header: name] = value }
        return request.headers
    }
}

/// A minimum transfer rate: at least ``bytes`` in every window of ``seconds``, checked once a transfer is
/// ``gracePeriod`` seconds old (the first window always counts, so a slow start is judged after one window).
///
/// Bytes of redirect responses count; time waiting in the loader's queue does not. Checked by a timer a quarter
/// window apart, so a transfer that is too slow ends between one and one and a quarter windows after it fell
/// below the rate (or after the grace period).
public struct HTTPTransferRate: Sendable, Hashable {
    /// Bytes that must arrive in each window.
    public var bytes: Int
    /// The window, seconds.
    public var seconds: Double
    /// Seconds after the request is sent before the rate is checked (default: one window).
    public var gracePeriod: Double

    /// Creates a rate of `bytes` per `seconds`, checked after `gracePeriod` (default: `seconds`).
    public init(bytes: Int, seconds: Double, gracePeriod: Double? = nil) {
        self.bytes = max(0, bytes)
        self.seconds = seconds
        self.gracePeriod = gracePeriod ?? seconds
    }
}

/// Retry with exponential back-off for 5xx, 408 and 429 answers and connection failures, before any body byte
/// arrived. An answer's `Retry-After` is the least wait before its retry; one longer than ``maxDelay`` ends the
/// transfer with that answer at once.
///
/// Timeouts, other 4xx, cancellation, size and content-type failures are never retried.
public struct HTTPRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (default 3).
    public var maxAttempts: Int
    /// Delay before the first retry, seconds (default 0.2); doubled for each further retry.
    public var baseDelay: Double
    /// Upper bound of one delay, seconds (default 5).
    public var maxDelay: Double

    /// Creates a policy.
    public init(maxAttempts: Int = 3, baseDelay: Double = 0.2, maxDelay: Double = 5) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = max(0, baseDelay)
        self.maxDelay = max(0, maxDelay)
    }

    /// The delay before retry number `retry` (1 for the first retry), scaled by `jitter` (the loader draws it
    /// from 0.8…1.2, so retries of many transfers spread out).
    func delay(beforeRetry retry: Int, jitter: Double) -> Double {
        let exponential = baseDelay * pow(2, Double(max(0, retry - 1)))
        return min(maxDelay, exponential) * jitter
    }
}
