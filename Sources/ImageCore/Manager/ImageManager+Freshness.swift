import Foundation

/// How a load treats the cached entry of its key that it found: serve it, or revalidate it with the loader.
///
/// ``ImageOptions/refreshCached`` revalidates every entry after delivering it; ``ImageOptions/refreshStale`` only a
/// stale one (``isFresh(_:now:)``), before answering, and renews the entry when the loader says it is current.
enum Revalidation: Equatable {
    /// Serve the entry.
    case none
    /// Deliver the entry (non-final), then revalidate it: `.refreshCached`.
    case afterDelivery
    /// Revalidate the entry before answering, since it is stale: `.refreshStale`.
    case beforeAnswer

    /// The clock is read only for a `.refreshStale` load: every cache hit passes here.
    init(options: ImageOptions, hit: CacheQueryResult) {
        if options.contains(.refreshCached) {
            self = .afterDelivery
        } else if options.contains(.refreshStale), !Self.isFresh(hit.metadata, now: Date()) {
            self = .beforeAnswer
        } else {
            self = .none
        }
    }

    /// Whether an entry with `metadata` may be served without asking the loader at `now`: its expiry, set from the
    /// response's `max-age` when it was stored, has not passed. An entry without one is stale: nothing said it may
    /// be reused, and a conditional request costs little.
    static func isFresh(_ metadata: CacheEntryMetadata?, now: Date) -> Bool {
        guard let expiresAt = metadata?.expiresAt else { return false }
        return expiresAt > now
    }

    /// `metadata` renewed by a revalidation that found it current at `now`: a new expiry from the 304's `max-age`,
    /// else the lifetime stored with it (RFC 9111 §4.3.4: a 304 updates the stored response's freshness). Nil when
    /// nothing states a lifetime: the entry stays stale, and every `.refreshStale` load of it asks again. The entry keeps
    /// its ``CacheEntryMetadata/extendedData`` unless the 304 brought the loader's updated one.
    static func renewed(
        _ metadata: CacheEntryMetadata?, response: ResponseMetadata?, now: Date
    ) -> CacheEntryMetadata? {
        guard var metadata, let lifetime = response?.maxAge ?? metadata.maxAge else { return nil }
        metadata.maxAge = lifetime
        metadata.expiresAt = now.addingTimeInterval(TimeInterval(lifetime))
        metadata.storedAt = now
        return metadata.keepingBlob(of: response)
    }

    /// Whether a `.refreshStale` load may serve an entry with `metadata` as it is (any other load may, and reads no
    /// clock).
    static func serves(_ metadata: CacheEntryMetadata?, options: ImageOptions) -> Bool {
        !options.contains(.refreshStale) || isFresh(metadata, now: Date())
    }
}

extension ImageManager {
    /// Keeps a cached result as the answer a "not modified" revalidation gives: delivered first for `.refreshCached`,
    /// held back for `.refreshStale`, whose 304 also renews the entry `hit` (``renewal(of:key:plan:)``).
    func keepForRevalidation(
        _ result: ImageResult, hit: CacheQueryResult, key: String, _ revalidation: Revalidation,
        _ operation: ImageLoadOperation, _ plan: LoadPlan
    ) {
        switch revalidation {
        case .none: return
        case .afterDelivery: operation.deliverCached(result)
        case .beforeAnswer: operation.keepCached(result, renew: renewal(of: hit, key: key, plan: plan))
        }
    }

    /// What a 304 for a stale entry does: stores the entry again, as the cache held it, with its renewed metadata
    /// (``Revalidation/renewed(_:response:now:)``). Never the image this load was answered with, which may be a
    /// variant (a first frame, for an animation budget) the key does not mean. The bytes are rewritten with the
    /// metadata (the protocol has no metadata-only update); a hit without bytes renews the memory level only, one
    /// without an image every level but memory.
    private func renewal(
        of hit: CacheQueryResult, key: String, plan: LoadPlan
    ) -> @Sendable (ResponseMetadata?) -> Void {
        let cache = plan.cache
        var levels = plan.storeCacheType
        if hit.data == nil { levels.formIntersection(.memory) }
        if hit.image == nil { levels.subtract(.memory) }
        return { [levels] response in
            guard levels != .none, let metadata = Revalidation.renewed(hit.metadata, response: response, now: Date())
            else { return }
            cache.store(hit.image, data: hit.data, metadata: metadata, forKey: key, cacheType: levels, completion: nil)
        }
    }
}

extension CacheEntryMetadata {
    /// This metadata with the loader's blob a revalidation's `response` brought (``ResponseMetadata/extendedData``),
    /// or as it is when the response brought none.
    func keepingBlob(of response: ResponseMetadata?) -> CacheEntryMetadata {
        guard let extended = response?.extendedData else { return self }
        var metadata = self
        metadata.extendedData = extended
        return metadata
    }
}
