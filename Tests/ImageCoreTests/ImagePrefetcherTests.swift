import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

@Suite struct ImagePrefetcherTests {
    /// Counts loader requests in flight.
    private final class CountingLoader: ImageLoader, Sendable {
        let inner = ScriptedLoader(delay: 0.01)
        let inFlight = Locked(0)
        let peak = Locked(0)
        let sawLowPriority = Locked(true)
        func canRequestImage(for url: URL) -> Bool { true }
        func requestImage(
            with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
            completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
        ) -> any ImageOperation {
            if !options.contains(.lowPriority) { sawLowPriority.withLock { $0 = false } }
            let now = inFlight.withLock {
                $0 += 1
                return $0
            }
            peak.withLock { $0 = max($0, now) }
            return inner.requestImage(with: url, options: options, context: context, progress: progress) { result in
                self.inFlight.withLock { $0 -= 1 }
                completion(result)
            }
        }
    }

    @Test func prefetchesWithBoundedConcurrencyAtLowPriority() async throws {
        let loader = CountingLoader()
        let urls = (0..<12).map { testURL("p\($0)") }
        for url in urls.dropLast(2) {
            loader.inner.set(.data(TestCoder.data(width: 2, height: 2), ResponseMetadata()), for: url)
        }
        let manager = ImageManager(cache: RecordingCache(), loader: loader)
        var context = ImageContext()
        context.imageCoder = TestCoder()
        let prefetcher = ImagePrefetcher(manager: manager)
        prefetcher.context = context
        #expect(prefetcher.maxConcurrentPrefetchCount == 3)
        let progress = Locked<[Int]>([])
        let completed = Locked<(Int, Int)?>(nil)
        prefetcher.prefetch(
            urls,
            progress: { finished, total in
                #expect(total == 12)
                progress.withLock { $0.append(finished) }
            }, completed: { finished, skipped in completed.withLock { $0 = (finished, skipped) } })
        #expect(await waitUntil { completed.value != nil })
        #expect(completed.value?.0 == 12)
        #expect(completed.value?.1 == 2, "two URLs have no script and fail")
        #expect(progress.value == Array(1...12))
        #expect(loader.peak.value <= 3)
        #expect(loader.sawLowPriority.value)
    }

    @Test func aNewBatchNeverCancelsAnEarlierOneAndTokensCancelTheirOwn() async throws {
        let loader = ScriptedLoader(delay: 0.02)
        loader.setDefault(.data(TestCoder.data(width: 2, height: 2), ResponseMetadata()))
        let manager = ImageManager(cache: RecordingCache(), loader: loader)
        var context = ImageContext()
        context.imageCoder = TestCoder()
        let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetchCount: 2)
        prefetcher.context = context
        let firstDone = Locked<(Int, Int)?>(nil)
        let secondDone = Locked<(Int, Int)?>(nil)
        prefetcher.prefetch(
            (0..<4).map { testURL("a\($0)") }, completed: { f, s in firstDone.withLock { $0 = (f, s) } })
        let second = prefetcher.prefetch(
            (0..<6).map { testURL("b\($0)") }, completed: { f, s in secondDone.withLock { $0 = (f, s) } })
        let third = prefetcher.prefetch((0..<3).map { testURL("c\($0)") })
        second.cancel()
        #expect(await waitUntil { firstDone.value != nil && third.finishedCount == 3 })
        #expect(firstDone.value?.0 == 4)
        #expect(await waitUntil { !manager.isRunning })
        prefetcher.startQueue.sync {}
        #expect(secondDone.value == nil, "a cancelled batch does not complete")
        // Cancelled while its URLs waited behind the first batch: each of them ended as skipped, none was loaded.
        #expect(second.finishedCount == 6 && second.skippedCount == 6)
        #expect(!loader.requests.contains { $0.url.absoluteString.contains("/b") })
    }
}
