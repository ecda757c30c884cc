import AsyncHTTPClient
import Dispatch
import Foundation
import ImageCore
import Logging
import NIOCore
import Synchronization

/// Loads `http` and `https` images with AsyncHTTPClient: SDWebImageDownloader for servers.
///
/// A queue in front of the client admits at most ``HTTPLoaderConfiguration/maxConcurrentDownloads`` transfers
/// (FIFO or LIFO, ``ImageOptions/highPriority`` first, ``ImageOptions/lowPriority`` last). Identical requests —
/// same method, URL and headers after the modifiers — share one transfer; every caller still gets its own
/// ``ImageOperation``, and cancelling it completes only that caller with `cancelled` (the last one leaving
/// cancels the transfer and closes its connection). With ``ImageOptions/refreshCached`` and a
/// ``ImageContext/loaderCachedMetadata`` the request is conditional and a 304 completes with `cacheNotModified`.
///
/// Modifiers: the configuration's request modifier, then the context's, shape the request; a load with a request
/// modifier in its context gets a transfer of its own. The configuration's response modifier, then the context's
/// (per caller, so it never splits a transfer), rewrite the response head before status and content type are
/// checked, per caller, so a modifier can fail a load; the decryptor applies per caller to the shared bytes.
/// Retries (opt-in, ``HTTPRetryPolicy``) happen only before any body byte arrived.
///
/// Limits: see ``HTTPLoaderConfiguration`` for the idle timeout, the total deadline and the minimum rate (one
/// watchdog timer per loader enforces the last two), the response size and the redirect rules. Every caller's
/// ``ImageContext/downloadHeaderCheck`` judges the first bytes: a caller whose check rejects them fails alone with
/// the check's error, and when no caller is left the connection is closed at once.
///
/// Credentials: ``requestCarriesCredentials(for:options:context:)`` tells the manager which loads must not be
/// shared; inside the loader, requests that differ in any header (credentials included) never share a transfer.
///
/// Threading: `requestImage` returns at once; `progress` and `completion` run on Dispatch queues (a serial queue
/// per transfer with progress listeners, else the loader's shared queue; never on a NIO event loop or the Swift
/// cooperative pool), progress before completion, completion exactly once. Thread-safe. Ownership: a loader created without a client owns one and must be ended with
/// ``shutdown()``; a given client stays the caller's to shut down.
public final class HTTPLoader: ImageLoader {
    /// The process-wide loader with the default configuration; never shut down.
    public static let shared = HTTPLoader()

    /// Callback queues of all transfers target this one, so callbacks never run on an event loop.
    static let callbackTarget = DispatchQueue(
        label: "webimage.httploader.callbacks", qos: .userInitiated, attributes: .concurrent)

    /// The configuration the loader was created with.
    public let configuration: HTTPLoaderConfiguration
    /// The cookies stored and sent for loads with ``ImageOptions/handleCookies``.
    public let cookieJar: HTTPCookieJar

    let logger: Logger
    let metrics: HTTPLoaderMetrics
    let events = EventBroadcaster()
    let responseValidator: ResponseValidator
    /// True when the loader's own client runs with redirect following off and ``RedirectPolicy`` decides hops.
    let followsRedirectsItself: Bool
    /// Where the watchdog and retry timers run.
    let eventLoop: any EventLoop

    private let client: HTTPClient
    private let ownsClient: Bool
    /// The client with certificate verification off, made on first use of ``ImageOptions/allowInvalidSSLCertificates``.
    private let insecureClient = Mutex<HTTPClient?>(nil)
    private let headers: Mutex<DefaultHeaders>
    private let state: Mutex<State>
    private let nextID = Atomic<UInt64>(0)
    private let watchdog = Mutex<Watchdog>(Watchdog())

    private struct DefaultHeaders: Sendable {
        var fields: [(name: String, value: String)]
        /// Whether `fields` hold Authorization, Proxy-Authorization or Cookie.
        var carryCredentials: Bool

        init(_ fields: [(name: String, value: String)]) {
            self.fields = fields
            carryCredentials = fields.contains { RedirectPolicy.credentialHeaders.contains($0.name.lowercased()) }
        }
    }

    /// The one timer that enforces deadlines and minimum rates of running transfers.
    private struct Watchdog: Sendable {
        var fireAt: UInt64?
        var scheduled: Scheduled<Void>?
    }

    private struct State: Sendable {
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
    ///     nil creates an owned client on the shared NIO event loop group.
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
    /// Errors: `invalidURL` (not http/https), `cancelled` (cancelled, a request modifier returned nil, or the
    /// loader was shut down), `invalidDownloadStatusCode` (with the status, after the response modifiers),
    /// `invalidDownloadContentType`, `invalidDownloadResponse` (a response modifier refused it, redirect loop or
    /// limit), ``ImageError/Code/redirectRefused``, `downloadTooLarge`, `timedOut` (idle timeout, deadline,
    /// minimum rate), `downloadFailed` (connection, DNS, TLS, reset, truncated body; AHC's error as `underlying`),
    /// `cacheNotModified` (304 for ``ImageOptions/refreshCached``), `badImageData` (the decryptor returned nil),
    /// or whatever the context's ``ImageContext/downloadHeaderCheck`` rejected the bytes with.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        guard canRequestImage(for: url) else {
            return Self.failEarly(.invalidURL("not an http(s) URL: \(url.absoluteString)"), completion)
        }
        let subscriber = nextID.add(1, ordering: .relaxed).newValue
        guard let request = prepareRequest(url: url, options: options, context: context, subscriber: subscriber) else {
            return Self.failEarly(.cancelled(stage: .download), completion)
        }
        let caller = Transfer.Caller(
            progress: progress, completion: completion, responseModifier: context.downloadResponseModifier,
            decryptor: context.downloadDecryptor ?? configuration.decryptor, headerCheck: context.downloadHeaderCheck)
        return enqueue(request, caller: caller, subscriber: subscriber, options: options)
    }

    /// True when the request for `url` would carry credentials: ``HTTPLoaderConfiguration/credentials``, an
    /// `Authorization`, `Proxy-Authorization` or `Cookie` default header, a request modifier (in the
    /// configuration or the context: it may add anything), or, with ``ImageOptions/handleCookies``, a cookie the
    /// jar holds for `url`. The manager then shares neither the download nor the cache entry of the load unless
    /// the context names a ``ImageContext/cachePartitionKey``. Thread-safe and fast.
    public func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        if configuration.credentials != nil || configuration.requestModifier != nil
            || context.downloadRequestModifier != nil
        {
            return true
        }
        if headers.withLock({ $0.carryCredentials }) { return true }
        return options.contains(.handleCookies) && cookieJar.hasCookies(for: url)
    }

    private func prepareRequest(url: URL, options: ImageOptions, context: ImageContext, subscriber: UInt64)
        -> TransferRequest?
    {
        var request = ImageRequest(url: url, headers: headers.withLock { $0.fields })
        if options.contains(.handleCookies), let cookies = cookieJar.cookieHeader(for: url) {
            request[header: "Cookie"] = cookies
        }
        if options.contains(.refreshCached), let cached = context.loaderCachedMetadata {
            if let etag = cached.etag.flatMap(HTTPResponseParsing.entityTag) { request[header: "If-None-Match"] = etag }
            if let lastModified = cached.lastModified { request[header: "If-Modified-Since"] = lastModified }
        }
        // User code, called without any lock held.
        if let modifier = configuration.requestModifier {
            guard let modified = modifier.modifiedRequest(for: request) else { return nil }
            request = modified
        }
        let ownModifier = context.downloadRequestModifier
        if let ownModifier {
            guard let modified = ownModifier.modifiedRequest(for: request) else { return nil }
            request = modified
        }
        let timeout = request.timeout ?? context.httpTransferTimeout ?? configuration.maximumTransferDuration
        return TransferRequest(
            request: request, insecure: options.contains(.allowInvalidSSLCertificates),
            handleCookies: options.contains(.handleCookies), timeout: timeout,
            // A modifier of the caller's own may have added anything: such a transfer is never shared.
            privateTo: ownModifier == nil ? nil : subscriber)
    }

    private enum Admission {
        case joined(Transfer, replay: TransferStateMachine.ProgressReport?, partial: Data?, callers: Int)
        case created(Transfer, startNow: Bool)
        case shutDown
    }

    private func enqueue(
        _ request: TransferRequest, caller: Transfer.Caller, subscriber: UInt64, options: ImageOptions
    ) -> any ImageOperation {
        let progressive = options.contains(.progressiveLoad)
        let priority: DownloadPriority =
            options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
        let admission = state.withLock { state -> Admission in
            guard !state.isShutdown else { return .shutDown }
            if let existing = state.transfers[request.key] {
                let (action, partial, callers) = existing.join(subscriber, caller: caller, progressive: progressive)
                if case .joined(let replay) = action {
                    state.queue.raise(existing.id, to: priority)
                    return .joined(existing, replay: replay, partial: partial, callers: callers)
                }
            }
            let transfer = Transfer(id: subscriber, request: request, loader: self)
            _ = transfer.join(subscriber, caller: caller, progressive: progressive)
            state.transfers[request.key] = transfer
            let startNow = state.queue.enqueue(transfer.id, priority: priority)
            if startNow { state.running[transfer.id] = transfer } else { state.queued[transfer.id] = transfer }
            return .created(transfer, startNow: startNow)
        }
        let transfer: Transfer
        switch admission {
        case .shutDown:
            return Self.failEarly(.cancelled(stage: .download), caller.completion)
        case .joined(let existing, let replay, let partial, let callers):
            transfer = existing
            metrics.coalescedJoins.increment()
            events.yield(HTTPLoaderEvent(transferID: existing.id, url: existing.url, kind: .joined(callers: callers)))
            if let replay { existing.deliverReplay(replay, partialData: partial, to: subscriber) }
        case .created(let created, let startNow):
            transfer = created
            if startNow { created.start() }
        }
        return CancellableOperation { [transfer] in transfer.leave(subscriber) }
    }

    private static func failEarly(
        _ error: ImageError, _ completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        // Asynchronously, so a caller never sees its completion before `requestImage` returned.
        callbackTarget.async { completion(.failure(error)) }
        return CancellableOperation()
    }

    // MARK: Transfer bookkeeping

    /// The last caller left `transfer`: new callers must not join it, and a queued one leaves the queue.
    /// `cancelled` is false when the callers left because the response was refused (the failure is reported
    /// when the task ends).
    func transferAbandoned(_ transfer: Transfer, wasQueued: Bool, cancelled: Bool) {
        state.withLock { state in
            if state.transfers[transfer.request.key] === transfer { state.transfers[transfer.request.key] = nil }
            // If it is no longer in the queue, it was just granted a slot: `start()` gives the slot back.
            if wasQueued, state.queue.remove(transfer.id) { state.queued[transfer.id] = nil }
        }
        guard cancelled else { return }
        metrics.cancelled.increment()
        events.yield(HTTPLoaderEvent(transferID: transfer.id, url: transfer.url, kind: .cancelled))
        logger.debug("HTTP transfer cancelled", metadata: ["transfer": "\(transfer.id)", "url": "\(transfer.url)"])
    }

    // MARK: Watchdog

    /// Makes sure the watchdog fires within `interval` nanoseconds (a transfer started that needs watching).
    func watch(within interval: UInt64) {
        let now = NIODeadline.now().uptimeNanoseconds
        let step = max(interval, 1_000_000)  // at most a thousand ticks a second
        guard step < UInt64.max - now else { return }
        let target = now + step
        watchdog.withLock { watchdog in
            if let fireAt = watchdog.fireAt, fireAt <= target { return }
            watchdog.scheduled?.cancel()
            watchdog.fireAt = target
            watchdog.scheduled = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(target)) { [weak self] in
                self?.watchdogFired()
            }
        }
    }

    /// Checks every running transfer's deadline and rate, then sleeps until the soonest next check.
    private func watchdogFired() {
        // Cleared first: a transfer that starts from now on schedules its own tick.
        watchdog.withLock { $0 = Watchdog() }
        let running = state.withLock { Array($0.running.values) }
        let now = NIODeadline.now().uptimeNanoseconds
        var next = UInt64.max
        for transfer in running {
            if let interval = transfer.enforcePace(now: now) { next = min(next, interval) }
        }
        if next != .max { watch(within: next) }
    }

    /// `transfer` gave its slot back: start the next queued transfer in it.
    func transferEnded(_ transfer: Transfer) {
        let next = state.withLock { state -> Transfer? in
            if state.transfers[transfer.request.key] === transfer { state.transfers[transfer.request.key] = nil }
            state.running[transfer.id] = nil
            guard !state.isShutdown, let nextID = state.queue.finish(),
                let next = state.queued.removeValue(forKey: nextID)
            else { return nil }
            state.running[nextID] = next
            return next
        }
        next?.start()
    }

    // MARK: Shutdown

    /// Cancels every transfer (callers complete with `cancelled`), ends the event streams and shuts down the
    /// clients the loader owns. Later requests fail with `cancelled`.
    ///
    /// - Throws: The client's shutdown error, if any.
    public func shutdown() async throws {
        let transfers = state.withLock { state -> [Transfer] in
            state.isShutdown = true
            let all = Array(state.queued.values) + Array(state.running.values)
            state.queued = [:]
            state.transfers = [:]
            return all
        }
        for transfer in transfers { transfer.abort() }
        events.finishAll()
        if ownsClient { try await client.shutdown() }
        if let insecure = insecureClient.withLock({ $0 }) { try await insecure.shutdown() }
    }
}
