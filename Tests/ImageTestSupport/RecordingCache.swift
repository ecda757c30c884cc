import Dispatch
import Foundation
import ImageCore

/// A two-level cache double: a memory level answered synchronously and a "disk" level (a dictionary of bytes)
/// answered on a serial queue (synchronously with `.queryDiskDataSync`). Records every call.
///
/// Like a memory cache in front of a disk cache, it answers ``queryImageSync(forKey:options:context:cacheType:)``
/// when the memory level decides the query (a hit, or a miss with no disk level asked) and records that as a
/// `query`; otherwise it leaves the query to the asynchronous path, which records it. Create it with
/// `answersSynchronously: false` for a cache that only has the asynchronous query.
public final class RecordingCache: ImageCacheProtocol, Sendable {
    /// One recorded call.
    public enum Call: Sendable, Equatable {
        /// A query.
        case query(key: String, cacheType: ImageCacheType)
        /// A disk read (a query that reached the disk level).
        case diskRead(key: String)
        /// A store.
        case store(key: String, hasImage: Bool, hasData: Bool, cacheType: ImageCacheType)
        /// A removal.
        case remove(key: String)
        /// The end of a miss (``ImageCacheProtocol/missEnded(forKey:cacheType:outcome:)``).
        case missEnded(key: String, outcome: CacheMissOutcome)
    }

    private struct State: Sendable {
        var memory: [String: Image] = [:]
        var disk: [String: (Data, CacheEntryMetadata?)] = [:]
        var calls: [Call] = []
        var failStores = false
        var syncAnswers = 0
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "RecordingCache.disk")

    /// Seconds a disk-level query waits before reading (to cancel it deterministically).
    public let diskDelay: TimeInterval
    /// Called at ``TestStage/cacheQuery``, ``TestStage/diskRead`` and ``TestStage/store``.
    public let hook = StageHook()

    /// Whether ``queryImageSync(forKey:options:context:cacheType:)`` answers (else it always defers).
    public let answersSynchronously: Bool

    /// Creates an empty cache.
    public init(diskDelay: TimeInterval = 0, answersSynchronously: Bool = true) {
        self.diskDelay = diskDelay
        self.answersSynchronously = answersSynchronously
    }

    /// Synchronous queries answered so far (hits and misses; deferred ones are not counted).
    public var syncAnswers: Int { state.withLock { $0.syncAnswers } }

    /// Makes every store fail with `cacheFailure`.
    public func failStores(_ fail: Bool) { state.withLock { $0.failStores = fail } }

    /// Every call so far.
    public var calls: [Call] { state.withLock { $0.calls } }
    /// Ended misses so far, in order.
    public var endedMisses: [(key: String, outcome: CacheMissOutcome)] {
        state.withLock { state in
            state.calls.compactMap { call in
                if case .missEnded(let key, let outcome) = call { (key, outcome) } else { nil }
            }
        }
    }

    /// Queries (that reached the cache, synchronously or not) of `key` so far.
    public func queries(of key: String) -> Int {
        state.withLock { state in
            state.calls.filter { if case .query(key, _) = $0 { true } else { false } }.count
        }
    }

    /// Records the end of a miss.
    public func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {
        state.withLock { $0.calls.append(.missEnded(key: key, outcome: outcome)) }
    }

    /// Disk reads so far.
    public var diskReads: Int {
        state.withLock { state in state.calls.filter { if case .diskRead = $0 { true } else { false } }.count }
    }
    /// Stores so far.
    public var stores: [Call] {
        state.withLock { state in state.calls.filter { if case .store = $0 { true } else { false } } }
    }

    /// The image in memory for `key`.
    public func memoryImage(forKey key: String) -> Image? { state.withLock { $0.memory[key] } }
    /// The bytes on "disk" for `key`.
    public func diskData(forKey key: String) -> Data? { state.withLock { $0.disk[key]?.0 } }
    /// The metadata on "disk" for `key`.
    public func diskMetadata(forKey key: String) -> CacheEntryMetadata? { state.withLock { $0.disk[key]?.1 } }

    /// Seeds the memory level without recording.
    public func seedMemory(_ image: Image, forKey key: String) { state.withLock { $0.memory[key] = image } }
    /// Seeds the disk level without recording.
    public func seedDisk(_ data: Data, metadata: CacheEntryMetadata? = nil, forKey key: String) {
        state.withLock { $0.disk[key] = (data, metadata) }
    }

    /// Answers from memory when that decides the query: a hit (without `.queryMemoryData`), or a miss when the disk
    /// level is not asked. Records it as a `query` (and fires ``TestStage/cacheQuery``) only when it answers.
    public func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult {
        guard answersSynchronously else { return .needsAsyncQuery }
        let answer = state.withLock { state -> SyncCacheQueryResult in
            let image = cacheType.contains(.memory) ? state.memory[key] : nil
            let answer: SyncCacheQueryResult
            if let image, !options.contains(.queryMemoryData) {
                answer = .hit(CacheQueryResult(image: image, cacheType: .memory))
            } else if image == nil, !cacheType.contains(.disk) {
                answer = .miss
            } else {
                return .needsAsyncQuery
            }
            state.calls.append(.query(key: key, cacheType: cacheType))
            state.syncAnswers += 1
            return answer
        }
        if case .needsAsyncQuery = answer { return answer }
        hook.fire(.cacheQuery)
        return answer
    }

    /// Memory first (sync); then disk on the queue unless `.queryDiskDataSync`.
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        hook.fire(.cacheQuery)
        let image = state.withLock { state -> Image? in
            state.calls.append(.query(key: key, cacheType: cacheType))
            return cacheType.contains(.memory) ? state.memory[key] : nil
        }
        if let image, !options.contains(.queryMemoryData) {
            completion(.success(CacheQueryResult(image: image, cacheType: .memory)))
            return nil
        }
        guard cacheType.contains(.disk) else {
            completion(.success(image.map { CacheQueryResult(image: $0, cacheType: .memory) }))
            return nil
        }
        let operation = CancellableOperation()
        let read: @Sendable () -> Void = {
            self.hook.fire(.diskRead)
            if operation.isCancelled { return completion(.failure(.cancelled(stage: .cacheQuery))) }
            let entry = self.state.withLock { state -> (Data, CacheEntryMetadata?)? in
                state.calls.append(.diskRead(key: key))
                return state.disk[key]
            }
            if let image {
                return completion(
                    .success(CacheQueryResult(image: image, data: entry?.0, metadata: entry?.1, cacheType: .memory)))
            }
            guard let (data, metadata) = entry else { return completion(.success(nil)) }
            completion(.success(CacheQueryResult(data: data, metadata: metadata, cacheType: .disk)))
        }
        if options.contains(.queryDiskDataSync) {
            read()
            return nil
        }
        queue.asyncAfter(deadline: .now() + diskDelay, execute: read)
        return operation
    }

    /// Memory at once; disk on the queue.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        hook.fire(.store)
        let fail = state.withLock { state -> Bool in
            state.calls.append(.store(key: key, hasImage: image != nil, hasData: data != nil, cacheType: cacheType))
            if state.failStores { return true }
            if cacheType.contains(.memory), let image { state.memory[key] = image }
            return false
        }
        if fail {
            completion?(.failure(.cacheFailure(SendableErrorBox(POSIXError(.ENOSPC)))))
            return
        }
        guard cacheType.contains(.disk), let data else {
            completion?(.success(()))
            return
        }
        queue.async {
            self.state.withLock { $0.disk[key] = (data, metadata) }
            completion?(.success(()))
        }
    }

    /// Removes from the levels.
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        state.withLock { state in
            state.calls.append(.remove(key: key))
            if cacheType.contains(.memory) { state.memory[key] = nil }
            if cacheType.contains(.disk) { state.disk[key] = nil }
        }
        completion?()
    }

    /// Levels holding `key`.
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        let found = state.withLock { state -> ImageCacheType in
            var found = ImageCacheType.none
            if cacheType.contains(.memory) && state.memory[key] != nil { found.insert(.memory) }
            if cacheType.contains(.disk) && state.disk[key] != nil { found.insert(.disk) }
            return found
        }
        completion(found)
    }

    /// Empties the levels.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        state.withLock { state in
            if cacheType.contains(.memory) { state.memory.removeAll() }
            if cacheType.contains(.disk) { state.disk.removeAll() }
        }
        completion?()
    }
}

/// Waits (polling, bounded) until `condition` holds; returns whether it did.
///
/// The bound is generous on purpose: the wait ends as soon as the condition holds, so only a failing test pays it,
/// and on a loaded 2-core machine a task can wait seconds for the cooperative pool while other suites' blocking
/// tests hold its threads (a 5-second bound failed CI once that way).
public func waitUntil(timeout: TimeInterval = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return condition()
}

/// Collects every delivery of a callback-style load. Thread-safe.
public final class DeliveryRecorder: Sendable {
    private let results = Locked([Result<ImageResult, ImageError>]())

    /// Creates an empty recorder.
    public init() {}

    /// The completion handler to pass to `loadImage`.
    public var handler: ImageCompletionHandler { { result in self.results.withLock { $0.append(result) } } }

    /// Every delivery so far.
    public var all: [Result<ImageResult, ImageError>] { results.value }

    /// Final deliveries (successes with `isFinal` and failures).
    public var finals: [Result<ImageResult, ImageError>] {
        all.filter { if case .success(let value) = $0 { value.isFinal } else { true } }
    }

    /// The one final result, once it arrived.
    public var final: Result<ImageResult, ImageError>? { finals.first }

    /// Waits for the final delivery (bounded as generously as ``waitUntil(timeout:_:)``, for the same reason).
    public func waitForFinal(timeout: TimeInterval = 30) async -> Result<ImageResult, ImageError>? {
        _ = await waitUntil(timeout: timeout) { !finals.isEmpty }
        return final
    }
}
