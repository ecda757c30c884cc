import Foundation

/// Per-target bookkeeping: the running load, URL and progress for each operation key. Thread-safe.
///
/// Owned by the target: when the target is released, this state goes with it, cancels the loads it still runs (a
/// view that goes away stops its downloads; their completions still receive `cancelled`) and ends its progress
/// streams.
public final class ImageTargetState: Sendable {
    struct Entry: Sendable {
        var generation: UInt64
        var url: URL?
        var operation: ImageLoadOperation?
        var progress = ImageTargetProgress.zero
    }

    private struct State: Sendable {
        var entries: [String: Entry] = [:]
        var counter: UInt64 = 0
        var observers: [String: [UInt64: AsyncStream<ImageTargetProgress>.Continuation]] = [:]
        var nextObserver: UInt64 = 0

        /// Stores `progress` for `key` and tells its observers when it changed.
        ///
        /// Yields under the lock, so observers see the values in the order they were set: a continuation's
        /// `yield` only buffers the value (and schedules a waiting task); it runs no observer code here.
        mutating func setProgress(_ progress: ImageTargetProgress, forKey key: String) {
            guard entries[key]?.progress != progress else { return }
            entries[key]?.progress = progress
            for continuation in observers[key, default: [:]].values { continuation.yield(progress) }
        }
    }

    /// Values a slow reader of a progress stream may fall behind by; older ones are dropped, never the newest.
    static let progressBuffer = 16

    private let state = Locked(State())

    /// Creates empty bookkeeping.
    public init() {}

    deinit {
        let (operations, observers) = state.withLock { state in
            (state.entries.values.compactMap(\.operation), state.observers.values.flatMap(\.values))
        }
        for operation in operations { operation.cancel() }
        for continuation in observers { continuation.finish() }
    }

    /// The URL of the latest `setImage` under `key`.
    public func imageURL(forKey key: String) -> URL? { state.withLock { $0.entries[key]?.url } }

    /// The running load under `key`, if any.
    public func operation(forKey key: String) -> ImageLoadOperation? {
        state.withLock { $0.entries[key]?.operation }
    }

    /// The progress of the latest load under `key` (``ImageTargetProgress/zero`` before any).
    public func progress(forKey key: String) -> ImageTargetProgress {
        state.withLock { $0.entries[key]?.progress ?? .zero }
    }

    /// The progress under `key`: its current value first, then every change, until the target is released (or
    /// the reader stops).
    ///
    /// There is no KVO on Linux; this stream is how to observe. A reader that falls more than 16 values behind
    /// skips the oldest ones, never the newest.
    public func progressUpdates(forKey key: String) -> AsyncStream<ImageTargetProgress> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ImageTargetProgress.self, bufferingPolicy: .bufferingNewest(Self.progressBuffer))
        let id = state.withLock { state -> UInt64 in
            state.nextObserver += 1
            state.observers[key, default: [:]][state.nextObserver] = continuation
            continuation.yield(state.entries[key]?.progress ?? .zero)
            return state.nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                state.observers[key]?[id] = nil
                if state.observers[key]?.isEmpty == true { state.observers[key] = nil }
            }
        }
        return stream
    }

    /// Cancels the running load under `key`.
    public func cancel(forKey key: String) {
        let operation = state.withLock { state -> ImageLoadOperation? in
            defer { state.entries[key]?.operation = nil }
            return state.entries[key]?.operation
        }
        operation?.cancel()
    }

    // MARK: Load bookkeeping (ImageTarget.setImage)

    /// Starts a new load under `key`: a new generation, its URL, and progress back to zero.
    func begin(key: String, url: URL?) -> UInt64 {
        state.withLock { state in
            state.counter += 1
            let previous = state.entries[key]?.progress ?? .zero
            state.entries[key] = Entry(generation: state.counter, url: url, operation: nil, progress: previous)
            state.setProgress(.zero, forKey: key)
            return state.counter
        }
    }

    func isCurrent(key: String, generation: UInt64) -> Bool {
        state.withLock { $0.entries[key]?.generation == generation }
    }

    func attach(_ operation: ImageLoadOperation, key: String, generation: UInt64) {
        state.withLock { state in
            guard state.entries[key]?.generation == generation, !operation.isFinished else { return }
            state.entries[key]?.operation = operation
        }
    }

    func finish(key: String, generation: UInt64) {
        state.withLock { state in
            if state.entries[key]?.generation == generation { state.entries[key]?.operation = nil }
        }
    }

    /// Download progress of the load `generation` under `key`; ignored once a newer load started.
    func reportProgress(received: Int, expected: Int?, key: String, generation: UInt64) {
        state.withLock { state in
            guard let entry = state.entries[key], entry.generation == generation, !entry.progress.isFinished else {
                return
            }
            state.setProgress(
                ImageTargetProgress(completedUnitCount: received, totalUnitCount: expected, isFinished: false),
                forKey: key)
        }
    }

    /// The load `generation` under `key` delivered its final image: progress 1.0.
    func completeProgress(key: String, generation: UInt64) {
        state.withLock { state in
            guard let entry = state.entries[key], entry.generation == generation else { return }
            let bytes = entry.progress.totalUnitCount ?? entry.progress.completedUnitCount
            state.setProgress(
                ImageTargetProgress(
                    completedUnitCount: max(bytes, entry.progress.completedUnitCount),
                    totalUnitCount: entry.progress.totalUnitCount, isFinished: true),
                forKey: key)
        }
    }
}
