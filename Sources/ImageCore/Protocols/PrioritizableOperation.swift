/// How urgently a load's download should run: the order of a loader's queue (Nuke's `ImageRequest.Priority`).
///
/// ``ImageOptions/lowPriority`` and ``ImageOptions/highPriority`` give a load its initial priority; a
/// ``PrioritizableOperation`` changes it later.
public enum ImageLoadPriority: Int, Sendable, Hashable, Comparable, CaseIterable {
    /// Runs only when no normal or high download waits (prefetching).
    case low = 0
    /// The default.
    case normal = 1
    /// Runs before every waiting normal and low download.
    case high = 2

    /// The priority `options` ask for: ``ImageOptions/highPriority`` wins over ``ImageOptions/lowPriority``.
    public init(options: ImageOptions) {
        self = options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
    }

    /// Orders low < normal < high.
    public static func < (lhs: ImageLoadPriority, rhs: ImageLoadPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// An operation whose priority can change after it was issued, queued or running (Nuke's `ImageTask.priority`).
///
/// ``ImageLoadOperation`` (what `ImageManager.loadImage` returns) adopts it and passes the change on to the
/// download it waits on; a loader's own operation adopts it to reorder its queue. A download shared by several
/// loads runs at the highest priority of the loads still waiting on it.
///
/// Threading: thread-safe; setting the priority never calls a completion and never blocks on the work it
/// reprioritizes. Setting it after the operation finished has no effect.
public protocol PrioritizableOperation: ImageOperation {
    /// The operation's priority; setting it reorders queued work and reaches running work where the backend can.
    var priority: ImageLoadPriority { get set }
}
