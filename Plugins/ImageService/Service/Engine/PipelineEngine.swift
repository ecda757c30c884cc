import Dispatch
import Foundation
import ImageCore
import ImageServiceQuery
import Tracing

/// The service's engine: results and sources cached apart, each on the SDK's caches (``ServiceCache``: a
/// `CachesManager` over a `MemoryCache` of bytes, the local disk and a fleet's Redis). A source is a data load of an
/// `ImageManager` over the source caches and ``OriginLoader`` (`.refreshStale`: kept, reused while fresh, revalidated
/// once stale, one transfer for concurrent requests, a fleet's lease on a miss); a result is rendered by
/// ``Renderer`` and shared per result key by ``SingleFlight`` (a manager's product is a decoded image, not a
/// service's encoded result: issue 33's third piece). Thread-safe.
final class PipelineEngine: ServiceEngine {
    let results: ServiceCache
    let sources: ServiceCache
    let renderer: Renderer
    let metrics: ServiceMetrics
    private let resultFlights = SingleFlight<String, Thumbnail>()
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
    }

    func memoryResult(forKey key: String) -> StoredResult? {
        results.memoryHit(key).flatMap(Self.result)
    }

    func lowerResult(forKey key: String) async -> StoredResult? {
        // Every level, memory included, though the caller's memory lookup just missed: a flight for this key may
        // have ended and stored its result in between (the flight's key is forgotten before its callers resume),
        // and memory is where that result is at once — the disk is written in the background.
        await results.lookup(key).flatMap(Self.result)
    }

    func sharedResult(
        forKey key: String, joined: (Bool) -> Void, _ work: @escaping @Sendable () async throws -> Thumbnail
    ) async throws -> Thumbnail {
        try await resultFlights.value(for: key, joined: joined, work)
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

    func endResultMiss(forKey key: String, outcome: CacheMissOutcome) {
        results.missEnded(key, outcome: outcome)
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
