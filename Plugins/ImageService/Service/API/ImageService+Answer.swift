import Foundation
import HTTPTypes
import ImageCore
import ImageServiceQuery
import Synchronization
import Tracing

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
        var staleInMemory = false
        if let hit = engine.memoryResult(forKey: key) {
            try judge(hit)
            if hit.record.freshness.isFresh(at: Date()) { return .thumbnail(thumbnail(hit)) }
            staleInMemory = true
        }
        if !staleInMemory, conditional.isPresent {
            // A revalidating client on a result miss: the ETag follows from the source's validator, so the source
            // (fetched or revalidated inside a worker, like every origin byte) answers it without a render; when
            // the client's copy is not current, the same worker renders (it may not wait on another request's
            // load of the result while it holds a worker: that load may be waiting for one).
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
                let (made, keep) = try await render(options, encoding: encoding, source: source, work: work)
                if keep { store(made, forKey: key) }
                return .thumbnail(self.thumbnail(made, isShareable: keep, freshness: source.record.freshness))
            }
            return thumbnail
        }
        return .thumbnail(
            try await shared(key, options: options, encoding: encoding, staleInMemory: staleInMemory, work: work))
    }

    /// The result of `key` as every request that wants it at once shares it (``ServiceEngine/result(forKey:work:)``):
    /// kept, or made by the first request's work, or joined. Counted: a hit at its level, a joined load, or a miss
    /// when the work ran, whatever it then met (a stale memory entry was counted as the memory hit it was).
    private func shared(
        _ key: String, options: ThumbnailOptions, encoding: OutputEncoding, staleInMemory: Bool, work: WorkContext
    ) async throws -> Thumbnail {
        // The lookup ends where the work starts (the levels missed, or held a stale entry), or with the answer.
        let lookup = OpenSpan(tracer, "cache.lookup", attributes: ["cache.kind": .string(CacheKind.result.rawValue)])
        // Opened by the work once it made something to keep (the manager keeps it as the work returns), ended when
        // this request has its answer — or at once, when this request left while the work went on for others.
        let store = Mutex<(span: OpenSpan?, requestEnded: Bool)>((nil, false))
        let openStore: @Sendable ([String: SpanAttribute]) -> Void = { attributes in
            let span = OpenSpan(self.tracer, "store", attributes: attributes)
            let endNow = store.withLock { store -> Bool in
                store.span = span
                return store.requestEnded
            }
            if endNow { span.end() }
        }
        let endStore = { (error: (any Error)?) in
            store.withLock { store -> OpenSpan? in
                store.requestEnded = true
                return store.span
            }?.end(error: error)
        }
        let resultWork = ResultWork { stale in
            lookup.end(["cache.level": .string(stale == nil ? "miss" : "stale")])
            if !staleInMemory { self.metrics.cacheMiss(kind: .result) }
            let made = try await self.produce(options, encoding: encoding, stale: stale, work: work)
            switch made {
            case .made(let result, keep: true):
                openStore([
                    "cache.kind": .string(CacheKind.result.rawValue), "image.bytes": .int64(Int64(result.data.count)),
                ])
            case .unchanged:
                openStore(["cache.kind": .string(CacheKind.result.rawValue), "cache.renewed": true])
            case .made: break
            }
            return made
        }
        let loaded: LoadedResult
        do {
            loaded = try await engine.result(forKey: key, work: resultWork)
        } catch {
            lookup.end(["cache.level": "miss"], error: error)
            endStore(error)
            throw error
        }
        endStore(nil)
        let level = loaded.stored.level
        lookup.end(["cache.level": .string(level?.rawValue ?? "miss")])
        if loaded.joined {
            metrics.coalesced(kind: .result)
        } else if let level {
            metrics.cacheHit(kind: .result, level: level)
        }
        // A kept result made under an older policy is judged now; one made or renewed by the work was judged there.
        if level != nil { try judge(loaded.stored) }
        return thumbnail(
            loaded.stored, isShareable: loaded.isShareable, freshness: loaded.stored.record.freshness)
    }

    /// The work of a result load (the first request's, shared by those that join it): inside a worker, the source,
    /// then the stale result kept when its source did not change, else a render.
    private func produce(
        _ options: ThumbnailOptions, encoding: OutputEncoding, stale: EntryRecord?, work: WorkContext
    ) async throws -> ResultMade {
        if let stale { try judge(stale) }
        return try await workers.withWorker {
            let source = try await engine.source(options.source, context: work)
            try judge(source.record)
            if let stale, stale.sourceValidator == source.validator, source.isShareable {
                return .unchanged(source.record)
            }
            let (made, keep) = try await render(options, encoding: encoding, source: source, work: work)
            return .made(made, keep: keep)
        }
    }

    /// The thumbnail of `source` (the caller holds a worker), and whether it may be kept.
    private func render(
        _ options: ThumbnailOptions, encoding: OutputEncoding, source: SourceEntry, work: WorkContext
    ) async throws -> (StoredResult, keep: Bool) {
        let etag = ServiceKeys.entityTag(
            options, encoding: encoding, rendering: rendering, sourceValidator: source.validator)
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
        if !output.isComplete {
            metrics.incompleteSource()
            engine.discardSource(options.source)
        }
        return (made, source.isShareable && output.isComplete)
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
        thumbnail(hit, isShareable: true, freshness: hit.record.freshness)
    }

    private func thumbnail(_ result: StoredResult, isShareable: Bool, freshness: SourceFreshness) -> Thumbnail {
        Thumbnail(
            data: result.data, contentType: result.contentType, etag: result.etag, lastModified: result.lastModified,
            isShareable: isShareable, freshness: freshness, level: result.level)
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
