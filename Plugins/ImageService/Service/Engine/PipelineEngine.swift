import Dispatch
import Foundation
import ImageCore
import ImageServiceQuery
import Tracing

/// The service's engine: results and sources cached apart, each on the SDK's caches (``ServiceCache``: a
/// `CachesManager` over a `MemoryCache` of bytes, the local disk and a fleet's Redis), each loaded by an
/// `ImageManager` as data loads with `.refreshStale`: kept, reused while fresh, revalidated once stale, one load for
/// the requests that want it at once (cancelled when the last of them left), and a fleet's lease on a miss. A source's
/// loader is ``OriginLoader``; a result's is ``ResultLoader``, which runs the request's ``ResultWork`` (a worker, the
/// source, a render). Thread-safe.
final class PipelineEngine: ServiceEngine {
    let results: ServiceCache
    let sources: ServiceCache
    let renderer: Renderer
    let metrics: ServiceMetrics
    /// Loads results: `results`' caches, ``ResultLoader``, one render per result for the requests that want it.
    private let resultLoads: ImageManager
    /// Loads sources: `sources`' caches, ``OriginLoader``, one transfer per source for the requests that want it.
    private let sourceLoads: ImageManager
    private let onShutdown: @Sendable () async -> Void

    init(
        results: ServiceCache, sources: ServiceCache, fetcher: OriginFetcher, renderer: Renderer,
        freshness: FreshnessPolicy, metrics: ServiceMetrics, onShutdown: @escaping @Sendable () async -> Void
    ) {
        self.results = results
        self.sources = sources
        self.renderer = renderer
        self.metrics = metrics
        self.onShutdown = onShutdown
        sourceLoads = ImageManager(
            cache: sources.caches,
            loader: OriginLoader(fetcher: fetcher, freshness: freshness, pool: renderer.pool, metrics: metrics),
            coders: renderer.coders, workPool: renderer.pool)
        // A source is kept under the key the service always used for it, so a disk or fleet cache stays warm across
        // versions and ``discardSource(_:)`` finds it.
        sourceLoads.cacheKeyFilter = BlockCacheKeyFilter.block { url in
            (try? SourceURL(url.absoluteString)).map(ServiceKeys.sourceKey)
        }
        resultLoads = ImageManager(
            cache: results.caches, loader: ResultLoader(), coders: renderer.coders, workPool: renderer.pool)
        resultLoads.cacheKeyFilter = BlockCacheKeyFilter.block(ResultLoader.key(of:))
        // The service's worker pool admits renders (with its queue and its 429); a second bound here would hold
        // requests the pool would have refused.
        resultLoads.maxDownloadsAheadOfDecoding = .max
    }

    func memoryResult(forKey key: String) -> StoredResult? {
        results.memoryHit(key).flatMap(Self.result)
    }

    /// What a result load asks of the manager: the kept result while fresh, else the work; every request is asked.
    private static let resultOptions: ImageOptions = [.refreshStale, .retryFailed]

    func result(forKey key: String, work: ResultWork) async throws -> LoadedResult {
        let url = ResultLoader.url(forKey: key)
        var context = ImageContext()
        context[ResultLoader.work] = work
        var loaded = try await loadResult(url, options: Self.resultOptions, context: context)
        // A stale result renewed by this load's work (its source did not change) was made now, as far as the request
        // can tell: no level.
        let level =
            loaded.isNotModified ? nil : results.level(answeredBy: loaded.answeredBy, cacheType: loaded.cacheType)
        var stored = Self.result(loaded, level: level)
        if stored == nil, loaded.cacheType != .none {
            // Kept without a record this version can read (another version's): dropped, made again.
            results.remove(key)
            loaded = try await loadResult(url, options: Self.resultOptions.union(.fromLoaderOnly), context: context)
            stored = Self.result(loaded, level: nil)
        }
        guard let stored else { throw OriginFault("a result without its record") }
        return LoadedResult(
            stored: stored, isShareable: !loaded.response.cacheControl.noStore, joined: loaded.joinedTransfer)
    }

    private func loadResult(_ url: URL, options: ImageOptions, context: ImageContext) async throws -> ImageDataResult {
        do {
            return try await resultLoads.loadData(with: url, options: options, context: context)
        } catch {
            throw OriginLoader.serviceError(error)
        }
    }

    /// A loaded result, or nil when it came without the record this version of the service keeps with it.
    private static func result(_ loaded: ImageDataResult, level: CacheLevel?) -> StoredResult? {
        let response = loaded.response
        guard let record = EntryRecord.decode(response.extendedData), let etag = response.etag else { return nil }
        return StoredResult(
            data: loaded.data, contentType: response.contentType ?? "application/octet-stream", etag: etag,
            lastModified: response.lastModified, record: record, level: level)
    }

    func storeResult(_ result: StoredResult, forKey key: String) {
        let start = DispatchTime.now()
        results.store(
            result.data,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: result.contentType, etag: result.etag,
                lastModified: result.lastModified, expiresAt: result.record.freshness.reuseUntil,
                storedAt: Date(), size: result.data.count, extendedData: result.record.encoded()),
            forKey: key)
        ServiceMetrics.record(metrics.storeSeconds, since: start)
    }

    func discardSource(_ url: SourceURL) {
        sources.remove(ServiceKeys.sourceKey(url))
    }

    func render(_ source: SourceEntry, options: ThumbnailOptions, encoding: OutputEncoding, context: WorkContext)
        async throws -> Renderer.Output
    {
        let output = try await renderer.render(
            source.data, options: options, encoding: encoding, tracer: context.tracer)
        metrics.decodeSeconds.recordSeconds(output.decodeSeconds)
        metrics.resizeSeconds.recordSeconds(output.resizeSeconds)
        metrics.encodeSeconds.recordSeconds(output.encodeSeconds)
        return output
    }

    /// What a source load asks of the manager: the kept copy while fresh, else the origin; every request is asked
    /// (a failed-URL list is not the service's policy).
    private static let sourceOptions: ImageOptions = [.refreshStale, .retryFailed]

    func source(_ url: SourceURL, context: WorkContext) async throws -> SourceEntry {
        let location: URL
        do throws(SourceURL.Invalid) {
            location = try url.foundationURL()
        } catch {
            throw SourceRefusal(error.message)
        }
        return try await context.tracer.span("fetch", kind: .client) { span in
            span.attributes["http.url"] = url.canonical
            span.attributes["cache.kind"] = CacheKind.source.rawValue
            var loaded = try await loadSource(location, options: Self.sourceOptions, span: span)
            var record = EntryRecord.decode(loaded.response.extendedData)
            if record == nil, loaded.cacheType != .none {
                // Kept without a record this version can read (another version's): dropped, fetched again.
                discardSource(url)
                loaded = try await loadSource(
                    location, options: Self.sourceOptions.union(.fromLoaderOnly), span: span)
                record = EntryRecord.decode(loaded.response.extendedData)
            }
            guard let record else { throw OriginFault("a source without its record") }
            span.attributes["fetch.hops"] = record.provenance.hops.count
            let control = loaded.response.cacheControl
            return SourceEntry(
                data: loaded.data, record: record, isShareable: !control.noStore && !control.isPrivate,
                level: loaded.isNotModified
                    ? nil : sources.level(answeredBy: loaded.answeredBy, cacheType: loaded.cacheType))
        }
    }

    /// One data load of a source, counted: a hit at its level, else a miss; the origin's time when it was asked.
    private func loadSource(_ location: URL, options: ImageOptions, span: any Tracing.Span) async throws
        -> ImageDataResult
    {
        let start = DispatchTime.now()
        let loaded: ImageDataResult
        do {
            loaded = try await sourceLoads.loadData(with: location, options: options)
        } catch {
            // No kept bytes answered (a stale copy whose revalidation failed is not an answer).
            span.attributes["cache.level"] = "miss"
            metrics.cacheMiss(kind: .source)
            ServiceMetrics.record(metrics.originSeconds, since: start)
            throw OriginLoader.serviceError(error)
        }
        let level = sources.level(answeredBy: loaded.answeredBy, cacheType: loaded.cacheType)
        span.attributes["cache.level"] = level?.rawValue ?? "miss"
        if let level {
            metrics.cacheHit(kind: .source, level: level)
        } else {
            metrics.cacheMiss(kind: .source)
        }
        if level == nil || loaded.isNotModified {
            span.attributes["http.response.status_code"] = loaded.isNotModified ? 304 : loaded.response.statusCode ?? 0
            ServiceMetrics.record(metrics.originSeconds, since: start)
        }
        return loaded
    }

    func shutdown() async { await onShutdown() }

    /// A stored result, or nil when its entry is not one this version of the service wrote (no record).
    private static func result(_ hit: ServiceCache.Hit) -> StoredResult? {
        guard let record = EntryRecord.decode(hit.metadata.extendedData), let etag = hit.metadata.etag else {
            return nil
        }
        return StoredResult(
            data: hit.data, contentType: hit.metadata.contentType ?? "application/octet-stream", etag: etag,
            lastModified: hit.metadata.lastModified, record: record, level: hit.level)
    }
}
