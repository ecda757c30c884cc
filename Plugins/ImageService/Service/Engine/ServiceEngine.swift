import Foundation
import ImageCore
import ImageServiceQuery

/// The seam between the service's decisions and the machinery that keeps, shares, fetches and renders bytes.
///
/// Everything above it is the service's for good: admission, the deadline, the source policy judged on every
/// answer, freshness decisions, ETag and `304`, negotiation, metrics, logs and spans. Below it runs
/// ``PipelineEngine``: its caches are the SDK's (``ServiceCache``, a `CachesManager` over `MemoryCache`, `DiskCache`
/// and `RedisCache`) and so is its coalescing (results and sources are `ImageManager` data loads). What an
/// implementation must do is stated per requirement; ``WorkContext`` carries what it must honour.
protocol ServiceEngine: Sendable {
    /// The result stored under `key` in the fastest level (memory), on the caller's thread; nil on a miss.
    func memoryResult(forKey key: String) -> StoredResult?

    /// The result of `key`: a kept one while its freshness allows (memory, disk, a fleet's Redis), else what `work`
    /// makes of it — a new result, or the stale one renewed when its source did not change. The requests that ask at
    /// once share one `work` (the first one's); a request that leaves (its deadline) stops waiting at once, and the
    /// work is cancelled when the last of them left. A made result is kept when it may be; with fleet coalescing a miss
    /// holds the fleet's lease until then.
    func result(forKey key: String, work: ResultWork) async throws -> LoadedResult

    /// The source of `url`: a cached copy while ``EntryRecord/freshness`` says it is fresh, else revalidated
    /// with its validators (a 304 keeps the bytes), else fetched — every origin request under the service's
    /// source policy (each hop), within `context.deadline`. A cached copy the policy now refuses is refused
    /// (``SourceRefusal``). The caller holds a worker. Identical concurrent calls share one fetch.
    func source(_ url: SourceURL, context: WorkContext) async throws -> SourceEntry

    /// Decodes `source`, cuts and scales it for `options`, and encodes it in `encoding`, within the deadline (a
    /// stage not started when the task is cancelled never runs). The caller holds a worker.
    func render(_ source: SourceEntry, options: ThumbnailOptions, encoding: OutputEncoding, context: WorkContext)
        async throws -> Renderer.Output

    /// Removes the cached source of `url` from every level, so the next request fetches it again (its bytes ended
    /// before its image, or no coder could read them: the origin may have been caught mid-write).
    func discardSource(_ url: SourceURL)

    /// Stores a result made outside ``result(forKey:work:)`` on every level (memory at once, the rest in the
    /// background): a conditional request's render, made in the worker that answered it from its source's validator
    /// (it may not wait on another request's load while it holds a worker).
    func storeResult(_ result: StoredResult, forKey key: String)

    /// Closes what the engine holds open (origin clients, Redis connections).
    func shutdown() async
}

/// What a request hands the engine: its deadline and the tracer of its spans.
struct WorkContext: Sendable {
    let deadline: Deadline
    let tracer: StageTracer
}

/// A result as stored: the thumbnail's bytes and metadata (content type, ETag, Last-Modified) and the record of
/// the source it was made from.
struct StoredResult: Sendable {
    let data: Data
    let contentType: String
    let etag: String
    let lastModified: String?
    let record: EntryRecord
    /// The level it was found at; nil when it was just made.
    let level: CacheLevel?
}

/// A result as ``ServiceEngine/result(forKey:work:)`` answers it.
struct LoadedResult: Sendable {
    /// The result; its `level` is the cache level that held it, nil when this load's work made or renewed it.
    let stored: StoredResult
    /// False when it may not be cached (its source said `no-store` or `private`, or was cut short).
    let isShareable: Bool
    /// True when this request joined another request's load of the same result.
    let joined: Bool
}

/// A source as the engine hands it up.
struct SourceEntry: Sendable {
    let data: Data
    let record: EntryRecord
    /// False when the source said `no-store` or `private`: it was not cached, and nothing made from it may be.
    let isShareable: Bool
    /// The level it came from; nil when it came from the origin (fetched or revalidated).
    let level: CacheLevel?
    /// The source's `Last-Modified`.
    var lastModified: String? { record.lastModified }
    /// The validator the ETag is derived from.
    var validator: String { record.sourceValidator }
}

/// A thumbnail ready to answer with.
struct Thumbnail: Sendable {
    let data: Data
    let contentType: String
    let etag: String
    let lastModified: String?
    /// False when the source said `no-store` or `private`: nothing was cached, and the answer must say so.
    let isShareable: Bool
    /// When the source must be revalidated and what it allowed (the answer's `max-age` is capped by it).
    let freshness: SourceFreshness
    /// Where it came from: a cache level, or nil when this request's work made it.
    let level: CacheLevel?
}
