import Foundation

/// How one URL of a prefetch batch ended.
///
/// SDWebImage counts a URL as *skipped* when its load failed or was cancelled; so do the `skippedCount`s here
/// (``isSkipped`` is true for ``failed(_:)`` and ``skipped``). The two cases tell why the URL was not prefetched.
public enum PrefetchOutcome: Sendable {
    /// The load delivered its final image: the URL is in the cache (it may have been already).
    case finished(ImageResult)
    /// The load failed with `error` (never a cancellation: that is ``skipped``).
    case failed(ImageError)
    /// No load of the URL ran to an end: its batch was cancelled (by its token or the prefetcher's `cancelAll`)
    /// before the URL reported, whether it was queued or loading, or its load was cancelled elsewhere (the
    /// manager's `cancelAll`).
    case skipped

    /// True unless the URL was prefetched: what SDWebImage's `skippedCount` counts.
    public var isSkipped: Bool {
        if case .finished = self { return false }
        return true
    }
}

/// One URL of a prefetch batch has ended: SDWebImage's `imagePrefetcher:didPrefetchURL:finishedCount:totalCount:`.
///
/// The counts include this URL. A batch's own handler gets the batch's counts; the delegate gets the counts of
/// every batch since the prefetcher was last idle.
public struct PrefetchURLReport: Sendable {
    /// The URL that ended.
    public let url: URL
    /// How it ended.
    public let outcome: PrefetchOutcome
    /// URLs ended so far, this one included (prefetched or skipped).
    public let finishedCount: Int
    /// URLs ended without being prefetched so far (``PrefetchOutcome/isSkipped``).
    public let skippedCount: Int
    /// URLs in all.
    public let totalCount: Int
}

/// Hears about every URL and the end of every run of a prefetcher: SDWebImage's `SDWebImagePrefetcherDelegate`.
///
/// Both methods have empty default implementations. Calls never overlap and arrive in the order the URLs ended,
/// on the thread that ended them (a load's callback queue, or the thread that cancelled a batch); the prefetcher
/// holds its delegate weakly. As in SDWebImage, the delegate hears about a URL before the batch's per-URL handler
/// and progress, and that the prefetcher is idle before the last batch's completion.
public protocol ImagePrefetcherDelegate: AnyObject, Sendable {
    /// A URL of a batch ended; the counts span every batch since the prefetcher was last idle.
    func imagePrefetcher(_ prefetcher: ImagePrefetcher, didPrefetch report: PrefetchURLReport)
    /// Every batch has ended or been cancelled: the prefetcher is idle. `totalCount` counts the URLs of the
    /// batches since it was last idle and `skippedCount` those of them not prefetched.
    func imagePrefetcher(_ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int)
}

extension ImagePrefetcherDelegate {
    /// Default: nothing.
    public func imagePrefetcher(_ prefetcher: ImagePrefetcher, didPrefetch report: PrefetchURLReport) {}
    /// Default: nothing.
    public func imagePrefetcher(
        _ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int
    ) {}
}
