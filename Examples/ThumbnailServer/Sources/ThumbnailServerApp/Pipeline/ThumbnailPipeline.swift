import Foundation
import ImageCore
import ThumbnailQuery

/// From a validated request to thumbnail bytes, each expensive step done once however many ask.
///
/// 1. The result cache: memory on the caller's thread, then disk, then Redis. A hit is the stored bytes — no
///    decode, no encode — with the ETag and Last-Modified stored beside them.
/// 2. On a miss, one flight per result key (``SingleFlight``): every identical request joins it. The flight holds a
///    worker of the bounded pool (``WorkerPool``; a full queue answers 429) while it gets the source and renders.
/// 3. The source: its own cache (memory, disk, Redis) and its own flight per source URL, so thumbnails of one
///    source in several sizes make one origin request; a hit skips the origin.
/// 4. Render (``Renderer``: decode at the thumbnail's size, cut and scale, encode once), then store those very
///    bytes in the result cache and answer with them.
///
/// A conditional request (`If-None-Match`, `If-Modified-Since`) that misses the memory level is judged from the
/// source's validators: the ETag is derived from them and the options (``ThumbnailKeys``), so a
/// `304` costs no decode. Thread-safe.
final class ThumbnailPipeline: Sendable {
    /// A thumbnail ready to send.
    struct Thumbnail: Sendable {
        let data: Data
        let contentType: String
        let etag: String
        let lastModified: String?
        /// False when the source said `no-store` or `private`: nothing was cached, and the response must say so.
        let isShareable: Bool
        /// Where it came from: a cache level, or nil when this request's flight rendered it.
        let level: CacheLevel?
    }

    /// What a request gets.
    enum Answer: Sendable {
        case thumbnail(Thumbnail)
        case notModified(etag: String, lastModified: String?, isShareable: Bool)
    }

    /// A source's bytes and what is known about them.
    struct Source: Sendable {
        let data: Data
        let metadata: CacheEntryMetadata
        let isShareable: Bool

        /// The validator the ETag is derived from.
        var validator: String {
            ThumbnailKeys.responseValidator(etag: metadata.etag, lastModified: metadata.lastModified)
                ?? ThumbnailKeys.contentValidator(data)
        }
    }

    let results: LayeredCache
    let sources: LayeredCache
    let fetcher: OriginFetcher
    let renderer: Renderer
    let workers: WorkerPool
    let metrics: ServerMetrics
    private let resultFlights = SingleFlight<String, Thumbnail>()
    private let sourceFlights = SingleFlight<String, Source>()

    init(
        results: LayeredCache, sources: LayeredCache, fetcher: OriginFetcher, renderer: Renderer, workers: WorkerPool,
        metrics: ServerMetrics
    ) {
        self.results = results
        self.sources = sources
        self.fetcher = fetcher
        self.renderer = renderer
        self.workers = workers
        self.metrics = metrics
    }

    /// The thumbnail for `options` in `encoding`, or `304` for a client whose copy is current.
    ///
    /// - Throws: ``WorkerPool/Overloaded``, ``SourceRefusal``, the SDK's ``ImageError``, a resolver error, or
    ///   `CancellationError` when the calling task is cancelled (the shared work goes on).
    func answer(
        _ options: ThumbnailOptions, encoding: OutputEncoding, ifNoneMatch: String?, ifModifiedSince: String?
    ) async throws -> Answer {
        let key = ThumbnailKeys.resultKey(options, encoding: encoding)
        if let hit = results.memoryHit(key) { return .thumbnail(thumbnail(hit)) }
        if ifNoneMatch != nil || ifModifiedSince != nil {
            let source = try await source(options.source)
            let etag = ThumbnailKeys.entityTag(options, encoding: encoding, sourceValidator: source.validator)
            if ConditionalRequest.isNotModified(
                ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, etag: etag,
                lastModified: source.metadata.lastModified)
            {
                return .notModified(
                    etag: etag, lastModified: source.metadata.lastModified, isShareable: source.isShareable)
            }
        }
        let thumbnail = try await resultFlights.value(
            for: key, joined: { if $0 { self.metrics.coalesced(kind: .result) } }
        ) {
            try await self.produce(key, options: options, encoding: encoding)
        }
        return .thumbnail(thumbnail)
    }

    /// The flight of one result key: the lower cache levels, else a worker, the source and a render.
    private func produce(_ key: String, options: ThumbnailOptions, encoding: OutputEncoding) async throws -> Thumbnail {
        if let hit = await results.lookup(key) { return thumbnail(hit) }
        do {
            return try await workers.withWorker {
                let source = try await self.source(options.source)
                let output = try await renderer.render(source.data, options: options, encoding: encoding)
                metrics.decodeSeconds.record(.seconds(output.decodeSeconds))
                metrics.resizeSeconds.record(.seconds(output.resizeSeconds))
                metrics.encodeSeconds.record(.seconds(output.encodeSeconds))
                let contentType = output.format.mimeType ?? "application/octet-stream"
                let etag = ThumbnailKeys.entityTag(options, encoding: encoding, sourceValidator: source.validator)
                let thumbnail = Thumbnail(
                    data: output.data, contentType: contentType, etag: etag,
                    lastModified: source.metadata.lastModified, isShareable: source.isShareable, level: nil)
                if source.isShareable {
                    let start = ContinuousClock.now
                    results.store(
                        BytesMemoryCache.Entry(
                            data: output.data,
                            metadata: CacheEntryMetadata(
                                originalKey: key, contentType: contentType, etag: etag,
                                lastModified: source.metadata.lastModified, storedAt: Date(), size: output.data.count)),
                        forKey: key)
                    metrics.storeSeconds.record(ContinuousClock.now - start)
                } else {
                    results.missEnded(key, outcome: .notStored)
                }
                return thumbnail
            }
        } catch {
            results.missEnded(key, outcome: LayeredCache.outcome(of: error))
            throw error
        }
    }

    /// The source's bytes: its cache, else one origin request however many ask.
    func source(_ url: SourceURL) async throws -> Source {
        let key = ThumbnailKeys.sourceKey(url)
        if let hit = sources.memoryHit(key) {
            return Source(data: hit.entry.data, metadata: hit.entry.metadata, isShareable: true)
        }
        return try await sourceFlights.value(for: key, joined: { if $0 { self.metrics.coalesced(kind: .source) } }) {
            if let hit = await self.sources.lookup(key, skipMemory: true) {
                return Source(data: hit.entry.data, metadata: hit.entry.metadata, isShareable: true)
            }
            do {
                let start = ContinuousClock.now
                let loaded = try await self.fetcher.fetch(url)
                self.metrics.originSeconds.record(ContinuousClock.now - start)
                let control = loaded.response.cacheControl
                let shareable = !control.noStore && !control.isPrivate
                let metadata = CacheEntryMetadata(response: loaded.response, key: key)
                if shareable {
                    self.sources.store(BytesMemoryCache.Entry(data: loaded.data, metadata: metadata), forKey: key)
                } else {
                    self.sources.missEnded(key, outcome: .notStored)
                }
                return Source(data: loaded.data, metadata: metadata, isShareable: shareable)
            } catch {
                self.sources.missEnded(key, outcome: LayeredCache.outcome(of: error))
                throw error
            }
        }
    }

    private func thumbnail(_ hit: LayeredCache.Hit) -> Thumbnail {
        Thumbnail(
            data: hit.entry.data, contentType: hit.entry.metadata.contentType ?? "application/octet-stream",
            etag: hit.entry.metadata.etag ?? "", lastModified: hit.entry.metadata.lastModified, isShareable: true,
            level: hit.level)
    }
}
