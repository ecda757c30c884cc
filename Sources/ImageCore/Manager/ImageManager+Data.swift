import Foundation

/// The bytes of a data load (``ImageManager/loadData(with:options:context:)``): as the loader delivered them, with
/// the response they came with.
public struct ImageDataResult: Sendable {
    /// The body, after the context's ``ImageContext/downloadDecryptor`` if it has one.
    public let data: Data
    /// The loader's response: status, validators, `Cache-Control`, headers.
    public let response: ResponseMetadata
    /// The requested URL.
    public let url: URL
    /// The level that held the bytes (a ``ImageOptions/refreshStale`` data load); `.none` when the loader sent them.
    public let cacheType: ImageCacheType
    /// True when the loader found the cached bytes current (HTTP 304): ``data`` are the cached ones.
    public let isNotModified: Bool
    /// Which cache held the bytes, as its position in the ``CachesManager`` the manager's cache is (see
    /// ``CacheQueryResult/answeredBy``; a fleet's third level is told apart from its disk); nil when the loader sent
    /// them or the cache is not a `CachesManager`.
    public let answeredBy: Int?
    /// True when this load was served by a transfer (or a revalidation) another load had started: it was coalesced
    /// with that load. False for the load that started it and for answers from the cache.
    public internal(set) var joinedTransfer = false

    /// Creates a result.
    public init(
        data: Data, response: ResponseMetadata, url: URL, cacheType: ImageCacheType = .none,
        isNotModified: Bool = false, answeredBy: Int? = nil
    ) {
        self.data = data
        self.response = response
        self.url = url
        self.cacheType = cacheType
        self.isNotModified = isNotModified
        self.answeredBy = answeredBy
    }
}

/// Completion of a data load: called exactly once.
public typealias ImageDataCompletionHandler = @Sendable (Result<ImageDataResult, ImageError>) -> Void

extension ImageManager {
    /// Loads the bytes at `url` from the loader, without decoding them, and returns them with their response.
    ///
    /// For a server that passes bytes on (a proxy, a crawler, a service that keeps its own source store): a data
    /// load shares its transfer with every load of the same URL in flight, image loads included, whenever an image
    /// load would share it (the same transfer fields: partition, validators, what the context's options declare;
    /// see ``OptionTraits``). It is served the bytes as they arrive, before any decode, and nothing an image load
    /// does with them — a decode, a pixel budget, a transform, a store — reaches it: the header check never refuses
    /// a transfer a data load waits on.
    ///
    /// Without ``ImageOptions/refreshStale`` it never reads or writes the cache: the bytes are the loader's answer of
    /// now. To revalidate bytes you keep, set ``ImageOptions/refreshCached`` and put their validators in
    /// ``ImageContext/loaderCachedMetadata`` (the HTTP loader then sends `If-None-Match` / `If-Modified-Since`): a
    /// loader that finds them current fails the load with ``ImageError/Code/cacheNotModified``.
    ///
    /// With `.refreshStale` the manager keeps the bytes for you, under the URL's original key (the key an image load
    /// of the URL stores its downloaded bytes under, in the cache and levels of the context): bytes whose `max-age`
    /// has not passed are the answer (``ImageDataResult/cacheType``); stale ones are revalidated with their validators
    /// before the answer, a 304 answers with them (``ImageDataResult/isNotModified``) and renews their lifetime; new
    /// bytes are stored (unless `no-store`, or `private` without ``cachesPrivateResponses``). With `.fromCacheOnly`
    /// stale bytes are the answer and a miss fails with `cacheMiss`.
    ///
    /// As an image load, it fails with `invalidURL` for an empty or relative URL and with `blockedURL` for a URL on
    /// the failed-URL list (unless ``ImageOptions/retryFailed``), but only for a verdict on the transfer (a 404),
    /// not on the image the bytes make (undecodable, over a budget: ``FailedURLList/Verdict``); its permanent
    /// failures put the URL there. ``ImageOptions/fromCacheOnly`` fails it with `cacheMiss`. ``ImageContext/loadTimeout`` bounds it, and
    /// cancelling the calling task cancels it (its share of the transfer).
    /// - Throws: ``ImageError``.
    public func loadData(
        with url: URL?, options: ImageOptions = [], context: ImageContext? = nil
    ) async throws(ImageError) -> ImageDataResult {
        let handle = Locked<ImageLoadOperation?>(nil)
        let result: Result<ImageDataResult, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let operation = loadData(with: url, options: options, context: context) {
                    continuation.resume(returning: $0)
                }
                handle.withLock { $0 = operation }
                if Task.isCancelled { operation.cancel() }
            }
        } onCancel: {
            handle.withLock { $0 }?.cancel()
        }
        return try result.get()
    }

    /// Loads the bytes at `url` from the loader, without decoding them; see ``loadData(with:options:context:)``.
    ///
    /// - Parameters:
    ///   - url: the URL; nil fails with `invalidURL`.
    ///   - options: the load's flags (``ImageOptions``): `.retryFailed`, `.refreshCached` with validators, priority…
    ///   - context: per-load keys (``ImageContext``), layered over the manager's defaults.
    ///   - completed: called exactly once, on the context's callback queue.
    /// - Returns: the handle that cancels this load only (its ``ImageLoadOperation/priority`` reaches the transfer).
    @discardableResult
    public func loadData(
        with url: URL?, options: ImageOptions = [], context: ImageContext? = nil,
        completed: @escaping ImageDataCompletionHandler
    ) -> ImageLoadOperation {
        let context = context ?? ImageContext()
        // The operation's own delivery carries only the failure: a data load's bytes are handed over by its job.
        let failed: ImageCompletionHandler = { result in
            if case .failure(let error) = result { completed(.failure(error)) }
        }
        guard let url else { return failedOperation(.invalidURL("nil URL"), context, failed) }
        return prepareLoad(
            url, options: options, context: context, wantsData: true, failed: { failedOperation($0, context, failed) }
        ) { url, context, lookup in
            let plan = LoadPlan(url: url, lookup: lookup, context: context, manager: self)
            let operation: ImageLoadOperation
            if plan.options.contains(.refreshStale), !plan.options.contains(.refreshCached) {
                operation = loadKeptData(plan, completed: completed)
            } else {
                operation = ImageLoadOperation(
                    url: url, manager: self, callbackQueue: plan.callbackQueue, progress: nil, completion: failed)
                // Registered for cancelAll before the work starts, as an image load is.
                register(operation)
                if let timeout = context.loadTimeout { Self.expire(operation, after: timeout) }
                download(
                    operation, plan, cached: nil, deliverData: DataDelivery { completed(.success($0)) })
            }
            return operation
        }
    }
}
