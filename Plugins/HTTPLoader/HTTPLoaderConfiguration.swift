import Foundation
import ImageCore
import Logging
import Metrics

/// Everything an ``HTTPLoader`` is built with; a value, copied into the loader at `init`.
///
/// Defaults suit a server: 6 concurrent downloads, 15 s connect and read timeouts, FIFO, at most 5 redirects,
/// 64 MiB per response, TLS verification on, no retry. Headers can still be changed on a live loader with
/// ``HTTPLoader/setValue(_:forHTTPHeaderField:)``.
public struct HTTPLoaderConfiguration: Sendable {
    /// How many transfers run at once; the rest wait in the loader's own queue (default 6).
    public var maxConcurrentDownloads: Int = 6
    /// Connect timeout and read (idle) timeout, seconds (default 15). A per-request `ImageRequest.timeout`
    /// additionally bounds the whole transfer.
    public var timeout: Double = 15
    /// Which queued transfer of equal priority starts next (default FIFO).
    public var executionOrder: DownloadExecutionOrder = .fifo
    /// The image formats listed in the default `Accept` header, most preferred first.
    ///
    /// Coders only answer `canDecode(Data)`, so the loader cannot ask ``CodersManager`` which MIME types it
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
    /// Status codes that count as success (default 200..<300). 304 is always handled as "not modified".
    public var acceptableStatusCodes: Set<Int> = Set(200..<300)
    /// If set, the only content types accepted (`image/png`, or a wildcard such as `image/*`); others fail with
    /// `invalidDownloadContentType`. A response without a content type passes.
    public var acceptableContentTypes: Set<String>?
    /// The largest response body accepted, checked against Content-Length and while streaming (default 64 MiB).
    public var maximumResponseSize: Int = 64 << 20
    /// Redirects followed before failing (default 5; 0 disables following). Cycles always fail.
    public var maximumRedirects: Int = 5
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

/// Retry with exponential back-off for 5xx answers and connection failures, before any body byte arrived.
///
/// Timeouts, 4xx, cancellation, size and content-type failures are never retried.
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

    /// The delay before retry number `retry` (1 for the first retry), with ±20 % jitter.
    func delay(beforeRetry retry: Int) -> Double {
        let exponential = baseDelay * pow(2, Double(max(0, retry - 1)))
        return min(maxDelay, exponential) * Double.random(in: 0.8...1.2)
    }
}
