import Dispatch
import Foundation
import ImageCore
import ImageServiceQuery

/// The service's engine: results and sources cached apart, each on the SDK's caches (``ServiceCache``: a
/// `CachesManager` over a `MemoryCache` of bytes, the local disk and a fleet's Redis); a source is fetched by
/// ``OriginFetcher`` and rendered by ``Renderer``; identical concurrent work is shared by ``SingleFlight`` per
/// result key and per source key (`ImageManager`'s coalescing shares decoded images, not a service's encoded
/// results and revalidated sources). Thread-safe.
final class PipelineEngine: ServiceEngine {
    let results: ServiceCache
    let sources: ServiceCache
    let fetcher: OriginFetcher
    let renderer: Renderer
    let freshness: FreshnessPolicy
    let metrics: ServiceMetrics
    private let resultFlights = SingleFlight<String, Thumbnail>()
    private let sourceFlights = SingleFlight<String, SourceEntry>()
    private let onShutdown: @Sendable () async -> Void

    init(
        results: ServiceCache, sources: ServiceCache, fetcher: OriginFetcher, renderer: Renderer,
        freshness: FreshnessPolicy, metrics: ServiceMetrics, onShutdown: @escaping @Sendable () async -> Void
    ) {
        self.results = results
        self.sources = sources
        self.fetcher = fetcher
        self.renderer = renderer
        self.freshness = freshness
        self.metrics = metrics
        self.onShutdown = onShutdown
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

    func source(_ url: SourceURL, context: WorkContext) async throws -> SourceEntry {
        let key = ServiceKeys.sourceKey(url)
        return try await sourceFlights.value(for: key, joined: { if $0 { self.metrics.coalesced(kind: .source) } }) {
            try await self.loadSource(url, key: key, context: context)
        }
    }

    /// One source flight: a fresh cached copy, else a revalidation of a stale one, else a fetch.
    private func loadSource(_ url: SourceURL, key: String, context: WorkContext) async throws -> SourceEntry {
        let cached = await context.tracer.spanning("cache.lookup") { span in
            let hit = await sources.lookup(key)
            span.attributes["cache.kind"] = CacheKind.source.rawValue
            span.attributes["cache.level"] = hit?.level.rawValue ?? "miss"
            return hit
        }
        var stale: (data: Data, record: EntryRecord)?
        if let cached, let record = EntryRecord.decode(cached.metadata.extendedData) {
            if record.freshness.isFresh(at: Date()) {
                return SourceEntry(data: cached.data, record: record, isShareable: true, level: cached.level)
            }
            stale = (cached.data, record)
        }
        do {
            let validators = stale.map {
                OriginFetcher.Validators(etag: $0.record.etag, lastModified: $0.record.lastModified)
            }
            let outcome = try await context.tracer.span("fetch", kind: .client) { span in
                span.attributes["http.url"] = url.canonical
                span.attributes["fetch.conditional"] = stale != nil
                let start = DispatchTime.now()
                defer { ServiceMetrics.record(metrics.originSeconds, since: start) }
                let outcome = try await fetcher.fetch(url, validators: validators, deadline: context.deadline)
                switch outcome {
                case .loaded(let loaded, let provenance):
                    span.attributes["http.response.status_code"] = loaded.response.statusCode ?? 0
                    span.attributes["fetch.hops"] = provenance.hops.count
                case .notModified(_, let provenance):
                    span.attributes["http.response.status_code"] = 304
                    span.attributes["fetch.hops"] = provenance.hops.count
                }
                return outcome
            }
            switch outcome {
            case .notModified(let response, let provenance):
                guard let stale else { throw ImageError(.invalidDownloadResponse, stage: .download, message: "304") }
                let now = Date()
                var record = stale.record
                let headers = response?.headers ?? [:]
                // A 304 that states a lifetime states both (its private one may be none); else the record's stand.
                if let stated = FreshnessPolicy.ownLifetime(headers: headers, now: now) {
                    record.statedLifetime = stated
                    record.statedPrivateLifetime = FreshnessPolicy.ownPrivateLifetime(headers: headers, now: now)
                }
                record.freshness = freshness.freshness(
                    lifetime: record.statedLifetime, privateLifetime: record.statedPrivateLifetime, now: now)
                record.provenance = provenance
                metrics.revalidated(changed: false)
                store(stale.data, record: record, contentType: nil, key: key)
                return SourceEntry(data: stale.data, record: record, isShareable: true, level: nil)
            case .loaded(let loaded, let provenance):
                let entry = try await made(loaded, provenance: provenance)
                if let stale { metrics.revalidated(changed: stale.record.sourceValidator != entry.validator) }
                if entry.isShareable {
                    store(entry.data, record: entry.record, contentType: loaded.response.contentType, key: key)
                } else {
                    sources.missEnded(key, outcome: .notStored)
                }
                return entry
            }
        } catch {
            sources.missEnded(key, outcome: missOutcome(of: error))
            throw error
        }
    }

    /// A fetched source as an entry: its record (provenance, freshness, validators) from the response. A source
    /// with neither ETag nor Last-Modified is identified by a digest of its bytes, taken on the CPU pool (20 MB of
    /// SHA-256 on the cooperative pool would stall every request handler behind it).
    private func made(_ loaded: LoadedImageData, provenance: SourceProvenance) async throws -> SourceEntry {
        let now = Date()
        let response = loaded.response
        let control = response.cacheControl
        let stated = FreshnessPolicy.ownLifetime(headers: response.headers, now: now)
        let statedPrivate = FreshnessPolicy.ownPrivateLifetime(headers: response.headers, now: now)
        let data = loaded.data
        var validator = ServiceKeys.responseValidator(etag: response.etag, lastModified: response.lastModified)
        if validator == nil {
            validator = try await renderer.pool.runCancellable { ServiceKeys.contentValidator(data) }
        }
        let sourceValidator = validator ?? ""
        let record = EntryRecord(
            provenance: provenance,
            freshness: freshness.freshness(lifetime: stated, privateLifetime: statedPrivate, now: now),
            statedLifetime: stated, statedPrivateLifetime: statedPrivate,
            sourceValidator: sourceValidator, etag: response.etag, lastModified: response.lastModified)
        return SourceEntry(
            data: loaded.data, record: record, isShareable: !control.noStore && !control.isPrivate, level: nil)
    }

    private func store(_ data: Data, record: EntryRecord, contentType: String?, key: String) {
        sources.store(
            data,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: contentType, etag: record.etag, lastModified: record.lastModified,
                expiresAt: record.freshness.reuseUntil, storedAt: Date(), size: data.count,
                extendedData: record.encoded()),
            forKey: key)
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
