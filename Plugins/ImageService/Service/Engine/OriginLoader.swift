import Foundation
import ImageCore
import ImageServiceQuery

/// The service's origins as an `ImageLoader`, so its sources ride `ImageManager`'s data loads with
/// `.refreshStale`: kept under the source key, reused while fresh, revalidated once stale, one transfer for the
/// requests that want it at once, and a fleet's lease on a miss (``PipelineEngine``).
///
/// A fetch is ``OriginFetcher``'s (the source policy on every hop). What the manager keeps with the bytes comes from
/// here:
/// - the response's `maxAge` is the lifetime the service reuses the source for: its own, clamped by the
///   ``ImageServiceQuery/FreshnessPolicy`` (so the manager's expiry is the policy's `reuseUntil`);
/// - its ``ImageCore/ResponseMetadata/extendedData`` is the source's ``EntryRecord``: the hops, the freshness the
///   answers' `max-age` is capped by, and the validator its results' ETags derive from (a SHA-256 of the bytes when
///   the origin gave neither ETag nor Last-Modified, taken on the CPU pool).
///
/// A revalidation sends the stored validators; a 304 completes with `cacheNotModified` carrying the stored record
/// renewed (this fetch's hops, the 304's lifetimes when it states them), which the manager stores with the bytes.
/// The service's own failures (``SourceRefusal``, ``OriginFault``, a resolver's) travel as the underlying error of
/// an ``originFailed`` error, which ``serviceError(_:)`` unwraps.
///
/// No deadline of a request is the transfer's: each request leaves at its own (its task is cancelled), and the
/// manager cancels the transfer when the last request waiting on it left; each hop is bounded by the origin timeout.
/// Thread-safe.
struct OriginLoader: ImageLoader {
    /// The code of a failure the service, not the SDK, raised; the cause is the error's `underlying`.
    static let originFailed = ImageError.Code("originFailed")

    let fetcher: OriginFetcher
    let freshness: FreshnessPolicy
    let pool: WorkPool
    let metrics: ServiceMetrics

    func canRequestImage(for url: URL) -> Bool { url.scheme == "http" || url.scheme == "https" }

    /// Never: the service answers every request on its own (a 404 is fetched again), as it did before it had a
    /// manager.
    func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool { false }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let cached = options.isDisjoint(with: .revalidating) ? nil : context.loaderCachedMetadata
        let task = Task {
            do {
                completion(.success(try await load(url, cached: cached)))
            } catch {
                completion(.failure(Self.imageError(error)))
            }
        }
        return CancellableOperation { task.cancel() }
    }

    private func load(_ url: URL, cached: CacheEntryMetadata?) async throws -> LoadedImageData {
        let source: SourceURL
        do throws(SourceURL.Invalid) {
            source = try SourceURL(url.absoluteString)
        } catch {
            throw SourceRefusal(error.message)
        }
        let validators = cached.map { OriginFetcher.Validators(etag: $0.etag, lastModified: $0.lastModified) }
        // Every hop is bounded by the origin timeout; the whole fetch by that many of them (a request that stops
        // waiting cancels it sooner).
        let bound = Deadline(seconds: fetcher.originTimeout * Double(fetcher.maxRedirects + 1))
        switch try await fetcher.fetch(source, validators: validators, deadline: bound) {
        case .notModified(let response, let provenance):
            guard let record = EntryRecord.decode(cached?.extendedData) else {
                // Current, but kept without a record this version can read (another version's): fetched whole, so
                // it is kept again with one, rather than failing every request until it is evicted.
                return try await load(url, cached: nil)
            }
            metrics.revalidated(changed: false)
            throw ImageError(.cacheNotModified, stage: .download, statusCode: 304)
                .attaching(response: renewed(record, response: response, provenance: provenance))
        case .loaded(let loaded, let provenance):
            let record = try await made(loaded, provenance: provenance)
            if let stale = EntryRecord.decode(cached?.extendedData) {
                metrics.revalidated(changed: stale.sourceValidator != record.sourceValidator)
            }
            var response = loaded.response
            response.maxAge = Self.seconds(until: record.freshness.reuseUntil)
            response.extendedData = record.encoded()
            return LoadedImageData(data: loaded.data, response: response)
        }
    }

    /// A fetched source's record (provenance, freshness, validators) from its response. A source with neither ETag
    /// nor Last-Modified is identified by a digest of its bytes, taken on the CPU pool (20 MB of SHA-256 on the
    /// cooperative pool would stall every request handler behind it).
    private func made(_ loaded: LoadedImageData, provenance: SourceProvenance) async throws -> EntryRecord {
        let now = Date()
        let response = loaded.response
        let stated = FreshnessPolicy.ownLifetime(headers: response.headers, now: now)
        let statedPrivate = FreshnessPolicy.ownPrivateLifetime(headers: response.headers, now: now)
        var validator = ServiceKeys.responseValidator(etag: response.etag, lastModified: response.lastModified)
        if validator == nil {
            let data = loaded.data
            validator = try await pool.runCancellable { ServiceKeys.contentValidator(data) }
        }
        return EntryRecord(
            provenance: provenance,
            freshness: freshness.freshness(lifetime: stated, privateLifetime: statedPrivate, now: now),
            statedLifetime: stated, statedPrivateLifetime: statedPrivate, sourceValidator: validator ?? "",
            etag: response.etag, lastModified: response.lastModified)
    }

    /// The response a 304 completes with: the kept record with this fetch's hops and, when the 304 states a
    /// lifetime, both of its lifetimes (its private one may be none); else the record's stand. Its `maxAge` is the
    /// renewed reuse lifetime.
    private func renewed(
        _ stored: EntryRecord, response: ResponseMetadata?, provenance: SourceProvenance
    ) -> ResponseMetadata {
        let now = Date()
        var record = stored
        let headers = response?.headers ?? [:]
        if let stated = FreshnessPolicy.ownLifetime(headers: headers, now: now) {
            record.statedLifetime = stated
            record.statedPrivateLifetime = FreshnessPolicy.ownPrivateLifetime(headers: headers, now: now)
        }
        record.freshness = freshness.freshness(
            lifetime: record.statedLifetime, privateLifetime: record.statedPrivateLifetime, now: now)
        record.provenance = provenance
        var renewed = response ?? ResponseMetadata(statusCode: 304)
        renewed.maxAge = Self.seconds(until: record.freshness.reuseUntil)
        renewed.extendedData = record.encoded()
        return renewed
    }

    /// Seconds from now until `date`, to the nearest (a lifetime of 1 s computed a moment ago is 1, not 0; 0 when
    /// past; capped so a far date stays an `Int`).
    static func seconds(until date: Date) -> Int {
        Int(min(max(0, date.timeIntervalSinceNow), 1e9).rounded())
    }

    /// `error` as the loader's failure: the SDK's errors as they are, a cancel as one, the service's own wrapped.
    static func imageError(_ error: any Error) -> ImageError {
        switch error {
        case let error as ImageError: error
        case is CancellationError: .cancelled(stage: .download)
        default:
            ImageError(originFailed, stage: .download, message: String(describing: error), underlying: error)
        }
    }

    /// The error a source load ended with as the service throws it: the cause of an ``originFailed`` error, anything
    /// else as it is.
    static func serviceError(_ error: any Error) -> any Error {
        guard let failure = error as? ImageError, failure.code == originFailed, let cause = failure.underlying else {
            return error
        }
        return cause
    }
}
