import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32 defect 11, first half: the async `queryImage` of every cache honours task cancellation — a cancelled
/// query throws `cancelled`, never a hit or a miss, and the query's operation is cancelled.
@Suite("Async cache query cancellation", .timeLimit(.minutes(1)))
struct AsyncCacheQueryCancellationTests {
    static func expectCancelled(_ result: Result<CacheQueryResult?, any Error>) {
        switch result {
        case .success(let hit): Issue.record("a cancelled query ended with success: \(String(describing: hit?.data))")
        case .failure(let error):
            let imageError = error as? ImageError
            #expect(imageError?.code == .cancelled && imageError?.stage == .cacheQuery, "\(error)")
        }
    }

    @Test(
        "a third-party cache that ignores its operation's cancel: the cancelled task throws cancelled, the operation is cancelled, the late answer is dropped"
    )
    func cacheThatIgnoresCancel() async {
        let cache = HeldQueryCache()
        let task = Task { try await cache.queryImage(forKey: "k") }
        #expect(await waitUntil { cache.waiting == 1 })
        task.cancel()
        // Answered only after the cancel: a query that honoured only its answer would now succeed.
        cache.releaseAll()
        Self.expectCancelled(await task.result)
        #expect(cache.queriesCancelled == 1)
        #expect(cache.completionsCalled == 1)
    }

    @Test("through a CachesManager: the cancelled task throws cancelled and the level's query is cancelled")
    func cachesManager() async {
        let level = HeldQueryCache()
        let caches = CachesManager([level])
        let task = Task { try await caches.queryImage(forKey: "k") }
        #expect(await waitUntil { level.waiting == 1 })
        task.cancel()
        level.releaseAll()
        Self.expectCancelled(await task.result)
        #expect(level.queriesCancelled == 1)
    }

    @Test("a cache that keeps the cancel contract answers the cancel once; the task throws cancelled")
    func cacheThatCompletesOnCancel() async {
        let cache = HeldQueryCache(completesOnCancel: true)
        let task = Task { try await cache.queryImage(forKey: "k") }
        #expect(await waitUntil { cache.waiting == 1 })
        task.cancel()
        // The answer comes too, and is dropped (released before the await, so no build of the cache can hang here).
        cache.releaseAll()
        Self.expectCancelled(await task.result)
        #expect(cache.queriesCancelled == 1 && cache.completionsCalled == 1)
    }

    @Test("a task cancelled before the call throws cancelled and starts no query")
    func cancelledBeforeTheCall() async {
        let cache = HeldQueryCache()
        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            withUnsafeCurrentTask { $0?.cancel() }
            return try await cache.queryImage(forKey: "k")
        }
        // A query started anyway is released, so the task ends either way.
        #expect(await waitUntil { cache.waiting == 1 || ended.value })
        cache.releaseAll()
        Self.expectCancelled(await task.result)
        #expect(cache.queriesStarted == 0)
    }

    @Test("an answer that comes before the cancel is kept")
    func answerBeforeCancel() async throws {
        let cache = HeldQueryCache()
        let task = Task { try await cache.queryImage(forKey: "k") }
        #expect(await waitUntil { cache.waiting == 1 })
        cache.releaseAll()
        let hit = try await task.value
        task.cancel()
        #expect(hit?.data == Data([1, 2, 3]))
        #expect(cache.queriesCancelled == 0)
    }
}
