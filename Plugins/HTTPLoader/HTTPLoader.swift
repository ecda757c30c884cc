import AsyncHTTPClient
import Dispatch
import Foundation
import ImageCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// Loads `http` and `https` images with AsyncHTTPClient: SDWebImageDownloader for servers.
///
/// A queue in front of the client admits at most ``HTTPLoaderConfiguration/maxConcurrentDownloads`` transfers
/// (FIFO or LIFO, ``/ImageCore/ImageOptions/highPriority`` first, ``/ImageCore/ImageOptions/lowPriority`` last).
/// Identical requests — same method, URL and headers after the modifiers — share one transfer; every caller still gets
/// its own ``/ImageCore/ImageOperation``, and cancelling it completes only that caller with `cancelled` (the last one
/// leaving cancels the transfer and closes its connection). With a flag of ``/ImageCore/ImageOptions/revalidating``
/// (`.refreshCached`, `.refreshStale`) and a ``/ImageCore/ImageContext/loaderCachedMetadata`` the request is
/// conditional and a 304 completes with `cacheNotModified` (carrying the 304's response).
///
/// Modifiers: the configuration's request modifier, then the context's, shape the request; a load with a request
/// modifier in its context gets a transfer of its own. The configuration's response modifier, then the context's
/// (per caller, so it never splits a transfer), rewrite the response head before status and content type are
/// checked, per caller, so a modifier can fail a load; the decryptor applies per caller to the shared bytes.
/// Retries (opt-in, ``HTTPRetryPolicy``) happen only before any body byte arrived.
///
/// Limits: see ``HTTPLoaderConfiguration`` for the idle timeout, the total deadline and the minimum rate (one
/// watchdog timer per loader enforces the last two), the response size and the redirect rules. Every caller's
/// ``/ImageCore/ImageContext/downloadHeaderCheck`` judges the first bytes: a caller whose check rejects them fails
/// alone with the check's error, and when no caller is left the connection is closed at once.
///
/// Credentials: ``requestCarriesCredentials(for:options:context:)`` tells the manager which loads must not be
/// shared; inside the loader, requests that differ in any header (credentials included) never share a transfer.
/// With ``/ImageCore/ImageOptions/handleCookies`` cookies are kept per ``/ImageCore/ImageContext/cachePartitionKey``
/// (``HTTPCookieJar``): one tenant's cookies never go out on another tenant's load.
///
/// Control: ``cancelAllDownloads()`` and ``cancelDownloads(for:)`` cancel transfers without shutting the loader
/// down (SDWebImageDownloader's `cancelAllDownloads`); the operation `requestImage` returns is a
/// ``/ImageCore/PrioritizableOperation`` whose priority reorders the queue while the transfer waits (Nuke's
/// `ImageTask.priority`); a transfer runs at the highest priority of its callers.
///
/// Threading: `requestImage` returns at once and never calls back before it returned. Progress and completion
/// never run under a lock; a caller's progress always precedes its completion, which comes exactly once. By
/// default they run on the NIO event loop that received the response (no thread hop: the manager moves straight
/// to its decode pool), so keep them short and hand heavy work off, as the manager does; cancellations, a late
/// joiner's replay and early failures arrive on a Dispatch queue. With
/// ``HTTPLoaderConfiguration/callbackQueue`` set, every callback runs on that queue. Thread-safe. Ownership: a
/// loader created without a client owns one and must be ended with ``shutdown()``; a given client stays the
/// caller's to shut down.
public final class HTTPLoader: ImageLoader {
    /// The process-wide loader with the default configuration; never shut down.
    public static let shared = HTTPLoader()

    /// Where callbacks produced off the event loops run (cancellations, replays, early failures) when the
    /// configuration names no callback queue.
    static let callbackTarget = DispatchQueue(
        label: "webimage.httploader.callbacks", qos: .userInitiated, attributes: .concurrent)

    /// The configuration the loader was created with.
    public let configuration: HTTPLoaderConfiguration
    /// The cancel registry of this loader's downloads (``downloadControl(for:)``).
    let control = DownloadControl()
    /// The cookies stored and sent for loads with ``/ImageCore/ImageOptions/handleCookies``, per
    /// ``/ImageCore/ImageContext/cachePartitionKey``.
    public let cookieJar: HTTPCookieJar

    let logger: Logger
    let metrics: HTTPLoaderMetrics
    let events = EventBroadcaster()
    let responseValidator: ResponseValidator
    /// True when the loader's own client runs with redirect following off and ``RedirectPolicy`` decides hops.
    let followsRedirectsItself: Bool
    /// Where the watchdog and retry timers run.
    let eventLoop: any EventLoop
    /// ``HTTPLoaderConfiguration/callbackQueue``.
    let callbackQueue: DispatchQueue?
    /// The rules every transfer starts from (its deadline is its own).
    let transferRules: TransferStateMachine.Rules

    private let client: HTTPClient
    private let ownsClient: Bool
    /// The client with certificate verification off, made on first use of ``ImageOptions/allowInvalidSSLCertificates``.
    private let insecureClient = Mutex<HTTPClient?>(nil)
    private let headers: Mutex<DefaultHeaders>
    let state: Mutex<State>
    let nextID = Atomic<UInt64>(0)
    let watchdog = Mutex<Watchdog>(Watchdog())

    private struct DefaultHeaders: Sendable {
        var fields: [(name: String, value: String)]
        /// Whether `fields` hold Authorization, Proxy-Authorization or Cookie.
        var carryCredentials: Bool
        /// `fields` as a coalescing key needs them, made once instead of per request.
        var keyParts: [String]
        /// `fields` as AsyncHTTPClient sends them, made once instead of per request.
        var wire: HTTPHeaders

        init(_ fields: [(name: String, value: String)]) {
            self.fields = fields
            carryCredentials = fields.contains { RedirectPolicy.credentialHeaders.contains($0.name.lowercased()) }
            keyParts = TransferRequest.keyParts(fields)
            wire = TransferRequest.wireHeaders(fields)
        }
    }

    /// The one timer that enforces deadlines and minimum rates of running transfers.
    struct Watchdog: Sendable {
        var fireAt: UInt64?
        var scheduled: Scheduled<Void>?
    }

    struct State: Sendable {
        var transfers: [TransferRequest.Key: Transfer] = [:]
        var queued: [UInt64: Transfer] = [:]
        var running: [UInt64: Transfer] = [:]
        var queue: DownloadQueue<UInt64>
        var isShutdown = false
    }

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - configuration: Limits, headers, modifiers, retry, logging and metrics.
    ///   - client: An AsyncHTTPClient to use (its timeouts and redirect rules then apply, not the configuration's);
    ///     nil creates an owned client on the shared NIO event loop group. Leave its `decompression` off (the
    ///     default): the loader removes a `gzip` or `deflate` content coding itself, within its size limit, and
    ///     would take a body the client already inflated for a coded one.
    public init(configuration: HTTPLoaderConfiguration = HTTPLoaderConfiguration(), client: HTTPClient? = nil) {
        self.configuration = configuration
        self.logger = configuration.logger
        self.cookieJar = HTTPCookieJar()
        self.metrics = HTTPLoaderMetrics(prefix: configuration.metricsPrefix, factory: configuration.metricsFactory)
        self.responseValidator = ResponseValidator(
            statusCodes: configuration.acceptableStatusCodes,
            contentTypes: configuration.acceptableContentTypes.map { Set($0.map { $0.lowercased() }) })
        self.headers = Mutex(DefaultHeaders(configuration.defaultHeaders))
        self.state = Mutex(
            State(
                queue: DownloadQueue(
                    maxConcurrent: configuration.maxConcurrentDownloads, order: configuration.executionOrder)))
        self.followsRedirectsItself = client == nil
        self.callbackQueue = configuration.callbackQueue
        self.transferRules = TransferStateMachine.Rules(
            progressByteInterval: configuration.progressByteInterval,
            progressTimeInterval: UInt64(max(0, configuration.progressTimeInterval) * 1e9),
            followsRedirects: client == nil, maximumRedirects: configuration.maximumRedirects,
            maximumResponseSize: configuration.maximumResponseSize, minimumRate: configuration.minimumTransferRate,
            retry: configuration.retry)
        if let client {
            self.client = client
            self.ownsClient = false
            self.eventLoop = client.eventLoopGroup.next()
        } else {
            self.eventLoop = HTTPClient.defaultEventLoopGroup.next()
            self.client = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: Self.clientConfiguration(configuration, verifyCertificates: true),
                backgroundActivityLogger: configuration.logger)
            self.ownsClient = true
        }
    }

    deinit {
        // AsyncHTTPClient traps in debug builds when a client is released running; shut owned ones down anyway.
        let running = state.withLock { !$0.isShutdown }
        if running {
            if ownsClient { client.shutdown().whenComplete { _ in } }
            insecureClient.withLock { $0 }?.shutdown().whenComplete { _ in }
        }
    }

    static func clientConfiguration(
        _ configuration: HTTPLoaderConfiguration, verifyCertificates: Bool
    ) -> HTTPClient.Configuration {
        let timeout = TimeAmount.nanoseconds(Int64(max(0.001, configuration.timeout) * 1e9))
        var client = HTTPClient.Configuration(
            certificateVerification: verifyCertificates ? .fullVerification : .none,
            // The loader follows redirects itself, so every hop is checked before it is sent.
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: timeout, read: timeout),
            maximumAllowedIdleTimeInConnectionPool: .nanoseconds(Int64(configuration.connectionIdleTimeout * 1e9)))
        // The loader's queue is the real limit; let the pool keep one connection per admitted transfer.
        client.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, configuration.maxConcurrentDownloads)
        client.connectionPool.retryConnectionEstablishment = configuration.retryConnectionEstablishment
        return client
    }

    /// Shuts down the clients the loader owns (``shutdown()``).
    func shutdownClients() async throws {
        if ownsClient { try await client.shutdown() }
        if let insecure = insecureClient.withLock({ $0 }) { try await insecure.shutdown() }
    }

    /// The client for a transfer; the insecure one is created on first use.
    func client(insecure: Bool) throws -> HTTPClient {
        guard insecure else { return client }
        return try insecureClient.withLock { existing in
            if let existing { return existing }
            guard !state.withLock({ $0.isShutdown }) else { throw HTTPClientError.alreadyShutdown }
            let made = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: Self.clientConfiguration(configuration, verifyCertificates: false),
                backgroundActivityLogger: logger)
            existing = made
            return made
        }
    }

    // MARK: Headers

    /// Sets (or with nil removes) a default header sent with every later request. Thread-safe.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        headers.withLock { headers in
            var request = ImageRequest(url: URL(fileURLWithPath: "/"), headers: headers.fields)
            request[header: field] = value
            headers = DefaultHeaders(request.headers)
        }
    }

    /// The default value of header `field` (case-insensitive), if set.
    public func value(forHTTPHeaderField field: String) -> String? {
        ImageRequest(url: URL(fileURLWithPath: "/"), headers: headers.withLock { $0.fields })[header: field]
    }

    /// The default headers, in sending order.
    public var httpHeaders: [(name: String, value: String)] { headers.withLock { $0.fields } }

    // MARK: Observability

    /// A stream of transfer events (start, join, response, finish, failure, cancel, retry) from now on.
    ///
    /// Each call makes an independent stream; it keeps the newest `bufferingNewest` events when read slowly and
    /// ends at ``shutdown()`` or when its consumer stops.
    public func events(bufferingNewest: Int = 4096) -> AsyncStream<HTTPLoaderEvent> {
        events.makeStream(bufferingNewest: bufferingNewest)
    }

    /// Transfers running and queued now (coalesced callers count once).
    public var activeTransferCount: (running: Int, queued: Int) {
        state.withLock { ($0.running.count, $0.queued.count) }
    }

    // MARK: ImageLoader

    /// True for `http` and `https` URLs with a host.
    public func canRequestImage(for url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return url.host?.isEmpty == false
    }

    /// Starts (or joins) the transfer of `url`; see the type's documentation for the rules.
    ///
    /// The returned operation is a ``/ImageCore/PrioritizableOperation``: its priority starts at what
    /// ``/ImageCore/ImageOptions/highPriority`` / ``/ImageCore/ImageOptions/lowPriority`` ask for.
    ///
    /// Errors: `invalidURL` (not http/https), `cancelled` (cancelled, a request modifier returned nil, or the
    /// loader was shut down or cancelled its downloads), `invalidDownloadStatusCode` (with the status, after the
    /// response modifiers), `invalidDownloadContentType`, `invalidDownloadResponse` (a response modifier returned
    /// nil, redirect loop or limit), ``ImageCore/ImageError/Code/redirectRefused``, `downloadTooLarge`, `timedOut`
    /// (idle timeout, deadline, minimum rate), `downloadFailed` (connection, DNS, TLS, reset, truncated body; AHC's
    /// error as `underlying`), `cacheNotModified` (304 for ``/ImageCore/ImageOptions/revalidating``), `badImageData`
    /// (the decryptor returned nil), or whatever the context's ``/ImageCore/ImageContext/downloadHeaderCheck`` rejected
    /// the bytes with. A failure after the response head arrived carries that response
    /// (``/ImageCore/ImageError/response``: status and headers), so a caller can log why it was refused.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        guard canRequestImage(for: url) else {
            return failEarly(.invalidURL("not an http(s) URL: \(url.absoluteString)"), completion)
        }
        let subscriber = nextID.add(1, ordering: .relaxed).newValue
        guard let request = prepareRequest(url: url, options: options, context: context, subscriber: subscriber) else {
            return failEarly(.cancelled(stage: .download), completion)
        }
        let caller = Transfer.Caller(
            progress: progress, completion: completion, responseModifier: context.downloadResponseModifier,
            decryptor: context.downloadDecryptor ?? configuration.decryptor, headerCheck: context.downloadHeaderCheck,
            requestedURL: url.absoluteString)
        let priority = DownloadPriority(ImageLoadPriority(options: options))
        let info = TransferStateMachine.Subscriber(
            id: subscriber, progressive: options.contains(.progressiveLoad), wantsProgress: progress != nil,
            priority: priority, modifiesResponse: caller.responseModifier != nil,
            awaitsHeaderCheck: caller.headerCheck != nil)
        return enqueue(request, subscriber: info, caller: caller)
    }

    /// True when the request for `url` would carry credentials: ``HTTPLoaderConfiguration/credentials``, an
    /// `Authorization`, `Proxy-Authorization` or `Cookie` default header, a request modifier (in the
    /// configuration or the context: it may add anything), or, with ``/ImageCore/ImageOptions/handleCookies``, a cookie
    /// the jar holds for `url` in the load's partition. The manager then shares neither the download nor the cache
    /// entry of the load unless the context names a ``/ImageCore/ImageContext/cachePartitionKey``. Thread-safe and
    /// fast.
    public func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        if configuration.credentials != nil || configuration.requestModifier != nil
            || context.downloadRequestModifier != nil
        {
            return true
        }
        if headers.withLock({ $0.carryCredentials }) { return true }
        return options.contains(.handleCookies)
            && cookieJar.hasCookies(for: url, partition: context.cachePartitionKey)
    }

    /// What in the context changes this loader's transfer: a per-request deadline
    /// (``ImageCore/ImageContext/httpTransferTimeout``) other than the configuration's
    /// ``HTTPLoaderConfiguration/maximumTransferDuration``. Loads whose keys differ never share a download, in
    /// the manager or in the loader, so a 1-second load never cuts short (or waits on) a default one.
    ///
    /// Everything else that changes a transfer is already kept apart: headers and a request modifier of the
    /// context (its load gets a transfer of its own, and ``/ImageCore/ImageRequest/timeout`` comes from modifiers), the
    /// cookie partition (``/ImageCore/ImageContext/cachePartitionKey``, part of the manager's key),
    /// ``/ImageCore/ImageOptions/handleCookies`` and ``/ImageCore/ImageOptions/allowInvalidSSLCertificates`` (options
    /// the manager keys on), and revalidation validators.
    public func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String {
        guard let timeout = context.httpTransferTimeout else { return "" }
        let deadline = TransferPace.nanoseconds(timeout)
        guard deadline != TransferPace.nanoseconds(configuration.maximumTransferDuration) else { return "" }
        return deadline == .max ? "deadline=none" : "deadline=\(deadline)ns"
    }

    private func prepareRequest(url: URL, options: ImageOptions, context: ImageContext, subscriber: UInt64)
        -> TransferRequest?
    {
        let defaults = headers.withLock { $0 }
        var request = ImageRequest(url: url, headers: defaults.fields)
        // The default headers' key parts and wire form serve as long as nothing below changes the headers.
        var headerKey: [String]? = defaults.keyParts
        let handleCookies = options.contains(.handleCookies)
        let partition = handleCookies ? context.cachePartitionKey : nil
        if handleCookies, let cookies = cookieJar.cookieHeader(for: url, partition: partition) {
            request[header: "Cookie"] = cookies
            headerKey = nil
        }
        if !options.isDisjoint(with: .revalidating), let cached = context.loaderCachedMetadata {
            if let etag = cached.etag.flatMap(HTTPResponseParsing.entityTag) { request[header: "If-None-Match"] = etag }
            if let lastModified = cached.lastModified { request[header: "If-Modified-Since"] = lastModified }
            headerKey = nil
        }
        // User code, called without any lock held.
        if let modifier = configuration.requestModifier {
            guard let modified = modifier.modifiedRequest(for: request) else { return nil }
            request = modified
            headerKey = nil
        }
        let ownModifier = context.downloadRequestModifier
        if let ownModifier {
            guard let modified = ownModifier.modifiedRequest(for: request) else { return nil }
            request = modified
            headerKey = nil
        }
        let timeout = request.timeout ?? context.httpTransferTimeout ?? configuration.maximumTransferDuration
        return TransferRequest(
            request: request, headerKey: headerKey, wireHeaders: headerKey == nil ? nil : defaults.wire,
            insecure: options.contains(.allowInvalidSSLCertificates),
            handleCookies: handleCookies, cookiePartition: partition, timeout: timeout,
            // A modifier of the caller's own may have added anything: such a transfer is never shared.
            privateTo: ownModifier == nil ? nil : subscriber)
    }

    /// Fails a load before any transfer exists, asynchronously, so a caller never sees its completion before
    /// `requestImage` returned.
    func failEarly(
        _ error: ImageError, _ completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        (callbackQueue ?? Self.callbackTarget).async { completion(.failure(error)) }
        return CancellableOperation()
    }
}
