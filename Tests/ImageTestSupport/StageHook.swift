import ImageCore

/// A stage of the main line at which a test double calls back, so a test can act there (cancel a load, count).
public enum TestStage: String, Sendable, CaseIterable {
    /// A cache query started.
    case cacheQuery
    /// A query reached the disk level, before it reads.
    case diskRead
    /// A loader request started.
    case download
    /// A loader is about to answer.
    case downloadAnswer
    /// A loader answered (or found its request cancelled) and returned from the completion.
    case downloadDone
    /// A decode started.
    case decode
    /// A transform started.
    case transform
    /// A store started.
    case store
}

/// A settable callback the doubles call at each ``TestStage``; thread-safe, nil by default.
public final class StageHook: Sendable {
    private let body = Locked<(@Sendable (TestStage) -> Void)?>(nil)

    /// Creates a hook that does nothing.
    public init() {}

    /// Sets the callback (nil removes it).
    public func set(_ callback: (@Sendable (TestStage) -> Void)?) { body.withLock { $0 = callback } }

    /// Calls the callback, if any, outside the lock.
    public func fire(_ stage: TestStage) { body.withLock { $0 }?(stage) }
}
