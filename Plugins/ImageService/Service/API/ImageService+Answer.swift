import Foundation
import HTTPTypes
import ImageCore
import ImageServiceQuery

/// What a request gets before it becomes a response.
enum Answer: Sendable {
    case thumbnail(Thumbnail)
    /// A conditional request on a result miss, judged from the source's validators alone (no render).
    case notModified(etag: String, lastModified: String?, isShareable: Bool, freshness: SourceFreshness)
}

/// The conditional headers of a request.
struct Conditional: Sendable {
    let ifNoneMatch: String?
    let ifModifiedSince: String?

    var isPresent: Bool { ifNoneMatch != nil || ifModifiedSince != nil }

    /// True when the client's copy is current; `lastModified` is the source's, judged as the answer states it
    /// (``StatedLastModified``).
    func isNotModified(etag: String, lastModified: String?) -> Bool {
        ConditionalRequest.isNotModified(
            ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, etag: etag,
            lastModified: StatedLastModified.value(lastModified, now: Date()))
    }
}

extension ImageService {
    /// The decisions of one request, under its deadline (see the type's steps 5 and 6).
    func answer(
        _ options: ThumbnailOptions, encoding: OutputEncoding, conditional: Conditional, work: WorkContext
    ) async throws -> Answer {
        let key = ServiceKeys.resultKey(options, encoding: encoding, rendering: rendering)
        var stale: StoredResult?
        if let hit = engine.memoryResult(forKey: key) {
            try judge(hit)
            if hit.record.freshness.isFresh(at: Date()) { return .thumbnail(thumbnail(hit)) }
            stale = hit
        }
        if stale == nil, conditional.isPresent {
            // A revalidating client on a result miss: the ETag follows from the source's validator, so the source
            // (fetched or revalidated inside a worker, like every origin byte) answers it without a render; when
            // the client's copy is not current, the same worker renders.
            let thumbnail = try await workers.withWorker { () -> Answer in
                let source = try await engine.source(options.source, context: work)
                try judge(source.record)
                let etag = ServiceKeys.entityTag(
                    options, encoding: encoding, rendering: rendering, sourceValidator: source.validator)
                if conditional.isNotModified(etag: etag, lastModified: source.lastModified) {
                    return .notModified(
                        etag: etag, lastModified: source.lastModified, isShareable: source.isShareable,
                        freshness: source.record.freshness)
                }
                return .thumbnail(
                    try await make(key, options: options, encoding: encoding, source: source, stale: nil, work: work))
            }
            return thumbnail
        }
        let memoryStale = stale
        let thumbnail = try await engine.sharedResult(
            forKey: key, joined: { if $0 { self.metrics.coalesced(kind: .result) } }
        ) {
            try await self.produce(key, options: options, encoding: encoding, stale: memoryStale, work: work)
        }
        return .thumbnail(thumbnail)
    }

    /// The flight of one result key: the slower cache levels, else a worker that gets the source and renders —
    /// or keeps a stale result whose source did not change.
    private func produce(
        _ key: String, options: ThumbnailOptions, encoding: OutputEncoding, stale: StoredResult?, work: WorkContext
    ) async throws -> Thumbnail {
        var stale = stale
        if stale == nil {
            let hit = await tracer.spanning("cache.lookup") { span in
                let hit = await engine.lowerResult(forKey: key)
                span.attributes["cache.kind"] = CacheKind.result.rawValue
                span.attributes["cache.level"] = hit?.level?.rawValue ?? "miss"
                return hit
            }
            if let hit {
                do {
                    try judge(hit)
                } catch {
                    engine.endResultMiss(forKey: key, outcome: .notStored)
                    throw error
                }
                if hit.record.freshness.isFresh(at: Date()) { return thumbnail(hit) }
                stale = hit
            }
        }
        do {
            return try await workers.withWorker {
                let source = try await engine.source(options.source, context: work)
                try judge(source.record)
                return try await make(
                    key, options: options, encoding: encoding, source: source, stale: stale, work: work)
            }
        } catch {
            engine.endResultMiss(forKey: key, outcome: missOutcome(of: error))
            throw error
        }
    }

    /// The thumbnail of `source` (the caller holds a worker): a stale stored one whose source did not change stands
    /// (fresh again), else a render, stored when the source allows.
    private func make(
        _ key: String, options: ThumbnailOptions, encoding: OutputEncoding, source: SourceEntry, stale: StoredResult?,
        work: WorkContext
    ) async throws -> Thumbnail {
        let etag = ServiceKeys.entityTag(
            options, encoding: encoding, rendering: rendering, sourceValidator: source.validator)
        if let stale, stale.record.sourceValidator == source.validator, source.isShareable {
            let refreshed = StoredResult(
                data: stale.data, contentType: stale.contentType, etag: stale.etag, lastModified: stale.lastModified,
                record: source.record, level: nil)
            store(refreshed, forKey: key)
            return thumbnail(refreshed)
        }
        let output: Renderer.Output
        do {
            output = try await engine.render(source, options: options, encoding: encoding, context: work)
        } catch let error as ImageError where error.stage == .decode && [.badImageData, .noCoder].contains(error.code) {
            // Bytes no coder can read (cut before the image began, or not an image yet) are not kept either: the
            // next request fetches them again instead of failing on the cached copy until it expires. Only the
            // decode's verdict: an encoder missing for the output (`noCoder` at `.encode`) says nothing of them.
            engine.discardSource(options.source)
            throw error
        }
        let made = StoredResult(
            data: output.data, contentType: output.contentType, etag: etag,
            lastModified: source.lastModified, record: source.record, level: nil)
        // A source cut short (its bytes end before its image) still answers this request, with what could be
        // decoded, but nothing made from it is kept, here or by the caches in front: not the result, not the
        // source (the next request fetches it again, so an origin caught mid-write heals at once).
        let keepable = source.isShareable && output.isComplete
        if keepable {
            store(made, forKey: key)
        } else {
            engine.endResultMiss(forKey: key, outcome: .notStored)
        }
        if !output.isComplete {
            metrics.incompleteSource()
            engine.discardSource(options.source)
        }
        return Thumbnail(
            data: made.data, contentType: made.contentType, etag: etag, lastModified: made.lastModified,
            isShareable: keepable, freshness: source.record.freshness, level: nil)
    }

    private func store(_ result: StoredResult, forKey key: String) {
        tracer.spanSync("store") { span in
            span.attributes["cache.kind"] = CacheKind.result.rawValue
            span.attributes["image.bytes"] = result.data.count
            engine.storeResult(result, forKey: key)
        }
    }

    /// Refuses a cached result whose provenance the current source policy refuses.
    private func judge(_ hit: StoredResult) throws { try judge(hit.record) }

    /// Refuses bytes whose provenance the current source policy refuses (a cached source or result made under an
    /// older policy; bytes just fetched pass, every hop having been checked).
    private func judge(_ record: EntryRecord) throws {
        if let refusal = policy.refusal(for: record.provenance) {
            metrics.policyRefusal(cached: true)
            throw SourceRefusal(refusal, publicMessage: "its origin is no longer allowed")
        }
    }

    private func thumbnail(_ hit: StoredResult) -> Thumbnail {
        Thumbnail(
            data: hit.data, contentType: hit.contentType, etag: hit.etag, lastModified: hit.lastModified,
            isShareable: true, freshness: hit.record.freshness, level: hit.level)
    }

    /// The HTTP answer: `304` when the client's copy is current, else the thumbnail; headers as the type says.
    func response(
        to answer: Answer, conditional: Conditional, variesByAccept: Bool, format: inout String
    ) -> ImageServiceResponse {
        switch answer {
        case .thumbnail(let thumbnail):
            format = thumbnail.contentType.split(separator: "/").last.map(String.init) ?? "none"
            var headers = headers(
                etag: thumbnail.etag, lastModified: thumbnail.lastModified, shareable: thumbnail.isShareable,
                freshness: thumbnail.freshness, variesByAccept: variesByAccept)
            if conditional.isNotModified(etag: thumbnail.etag, lastModified: thumbnail.lastModified) {
                metrics.notModified.increment()
                return ImageServiceResponse(status: .notModified, headers: headers)
            }
            headers[.contentType] = thumbnail.contentType
            return ImageServiceResponse(status: .ok, headers: headers, body: thumbnail.data)
        case .notModified(let etag, let lastModified, let shareable, let freshness):
            metrics.notModified.increment()
            return ImageServiceResponse(
                status: .notModified,
                headers: headers(
                    etag: etag, lastModified: lastModified, shareable: shareable, freshness: freshness,
                    variesByAccept: variesByAccept))
        }
    }

    /// `ETag`, `Last-Modified` (as ``StatedLastModified`` states it), `Vary`, and a `Cache-Control` whose `max-age`
    /// is the configured one capped by what is left of the source's own lifetime (for a private cache; an `s-maxage`
    /// when a shared cache's differs: ``FreshnessPolicy/answerAges(configured:freshness:now:)``);
    /// `stale-while-revalidate` only when
    /// the source's lifetime did not cap it: a source that allows 60 s is not served stale for a day by the caches in
    /// front).
    private func headers(
        etag: String, lastModified: String?, shareable: Bool, freshness: SourceFreshness, variesByAccept: Bool
    ) -> HTTPFields {
        var headers: HTTPFields = [.eTag: etag]
        if shareable {
            let policy = configuration.cacheControl
            let ages = FreshnessPolicy.answerAges(configured: policy.maxAge, freshness: freshness, now: Date())
            var value = "public, max-age=\(ages.maxAge)"
            if let shared = ages.sharedMaxAge { value += ", s-maxage=\(shared)" }
            if min(ages.maxAge, ages.sharedMaxAge ?? ages.maxAge) >= policy.maxAge, policy.staleWhileRevalidate > 0 {
                value += ", stale-while-revalidate=\(policy.staleWhileRevalidate)"
            }
            headers[.cacheControl] = value
        } else {
            headers[.cacheControl] = CacheControlPolicy.noStore
        }
        if let stated = StatedLastModified.value(lastModified, now: Date()) { headers[.lastModified] = stated }
        if variesByAccept { headers[.vary] = "Accept" }
        return headers
    }
}
