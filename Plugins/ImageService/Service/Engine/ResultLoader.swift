import Foundation
import ImageCore
import ImageServiceQuery
import Tracing

/// The service's results as an `ImageLoader`, so a result rides `ImageManager`'s data loads with `.refreshStale`
/// as a source does: kept under the result key, reused while its source's freshness allows, revalidated once stale,
/// one render for the requests that want it at once, and a fleet's lease on a miss (``PipelineEngine``).
///
/// A result's "URL" only names its key (``url(forKey:)``); what makes it is the request's ``ResultWork``, carried in
/// the load's context (``work``). The first request's work runs; the requests that join its load wait for it, and
/// the manager cancels it when the last of them left (each leaves at its own deadline). What the manager keeps comes
/// from here:
/// - a made result is answered `200` with its content type, ETag and Last-Modified, its source's ``EntryRecord`` as
///   the ``ImageCore/ResponseMetadata/extendedData`` and a `max-age` until the source's `reuseUntil`; a result that
///   may not be kept (its source said `no-store` or `private`, or was cut short) says `no-store`, so the manager
///   stores nothing and ends the miss `notStored`;
/// - a stale result whose source did not change completes with `cacheNotModified`, carrying the source's current
///   record and lifetime: the manager renews the kept entry (once, for every request that revalidated it).
///
/// The service's failures (``SourceRefusal``, ``OriginFault``, a decode's) travel as the `underlying` of an
/// ``OriginLoader/originFailed`` error, which ``OriginLoader/serviceError(_:)`` unwraps. Thread-safe.
struct ResultLoader: ImageLoader {
    static let scheme = "image-service-result"

    /// The context key of the ``ResultWork`` that makes the loaded result. It changes nothing about which result a
    /// load gets (the key does): requests with different work share one load.
    static let work = ImageContextOption("imageService.resultWork", traits: OptionTraits(.scheduling))

    /// The URL a result load of `key` asks for.
    static func url(forKey key: String) -> URL {
        // Result keys are a version and a hex digest: nothing to escape.
        URL(string: "\(scheme)://result/\(key)")!
    }

    /// The key a result URL names (the manager's cache-key filter).
    static func key(of url: URL) -> String? {
        url.scheme == scheme ? url.lastPathComponent : nil
    }

    func canRequestImage(for url: URL) -> Bool { url.scheme == Self.scheme }

    /// Never: a failed result is asked for again by the next request (its source may have healed).
    func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool { false }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        guard let work = context.value(Self.work, as: ResultWork.self) else {
            completion(.failure(ImageError(.noLoader, stage: .download, message: "a result load without its work")))
            return CancellableOperation()
        }
        let cached = options.isDisjoint(with: .revalidating) ? nil : context.loaderCachedMetadata
        // A stale entry without a record this version can read is not revalidated: it is made again, and replaced.
        let stale = cached.flatMap { EntryRecord.decode($0.extendedData) }
        let task = Task {
            do {
                completion(.success(try await Self.answer(work, stale: stale)))
            } catch {
                completion(.failure(OriginLoader.imageError(error)))
            }
        }
        return CancellableOperation { task.cancel() }
    }

    private static func answer(_ work: ResultWork, stale: EntryRecord?) async throws -> LoadedImageData {
        switch try await work.run(stale) {
        case .unchanged(let record):
            var renewed = ResponseMetadata(
                statusCode: 304, maxAge: OriginLoader.seconds(until: record.freshness.reuseUntil))
            renewed.extendedData = record.encoded()
            throw ImageError(.cacheNotModified, stage: .download, statusCode: 304).attaching(response: renewed)
        case .made(let result, let keep):
            var response = ResponseMetadata(
                statusCode: 200, contentType: result.contentType, etag: result.etag,
                lastModified: result.lastModified,
                maxAge: OriginLoader.seconds(until: result.record.freshness.reuseUntil),
                headers: keep ? [:] : ["cache-control": CacheControlPolicy.noStore])
            response.extendedData = result.record.encoded()
            return LoadedImageData(data: result.data, response: response)
        }
    }

}

/// What makes a result when its entry is missing or stale: the request's own work (a worker, the source, a render),
/// run in the trace of the request that started it.
struct ResultWork: Sendable {
    private let body: @Sendable (_ stale: EntryRecord?) async throws -> ResultMade
    private let context: ServiceContext?

    /// Work that runs `body` in the current task's trace context.
    init(_ body: @escaping @Sendable (_ stale: EntryRecord?) async throws -> ResultMade) {
        self.body = body
        context = ServiceContext.current
    }

    /// Runs the work; `stale` is the record of the result being revalidated (the source it was made from), nil on a
    /// miss.
    func run(_ stale: EntryRecord?) async throws -> ResultMade {
        guard let context else { return try await body(stale) }
        // The loader's task is started on whichever thread the manager asks from: the request's spans are its parents.
        return try await ServiceContext.withValue(context) { try await body(stale) }
    }
}

/// What a ``ResultWork`` made.
enum ResultMade: Sendable {
    /// The stale result stands: its source did not change. `record` is the source's current one.
    case unchanged(EntryRecord)
    /// A new result; `keep` is false when it may not be cached (``Thumbnail/isShareable``).
    case made(StoredResult, keep: Bool)
}
