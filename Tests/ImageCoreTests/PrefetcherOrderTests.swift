import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// Issue 32 defect 11, second half: SDWebImagePrefetcher's order — `callProgressBlockForToken:` calls the delegate's
/// `imagePrefetcher:didPrefetchURL:finishedCount:totalCount:` and then the progress block, and
/// `callCompletionBlockForToken:` the delegate's `imagePrefetcher:didFinishWithTotalCount:skippedCount:` and then
/// the completion block. Every callback of a prefetcher writes into one log here.
@Suite struct PrefetcherOrderTests {
    /// Writes the delegate's calls into the shared log.
    private final class LoggingDelegate: ImagePrefetcherDelegate {
        let log: Locked<[String]>
        init(log: Locked<[String]>) { self.log = log }

        func imagePrefetcher(_ prefetcher: ImagePrefetcher, didPrefetch report: PrefetchURLReport) {
            log.withLock { $0.append("delegate \(report.url.lastPathComponent)") }
        }

        func imagePrefetcher(
            _ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int
        ) {
            log.withLock { $0.append("idle") }
        }
    }

    private static func outcomeName(_ outcome: PrefetchOutcome) -> String {
        switch outcome {
        case .finished: "finished"
        case .failed: "failed"
        case .skipped: "skipped"
        }
    }

    @Test(
        "the delegate hears about every URL — finished or failed — before the batch's per-URL report and progress, and that the prefetcher is idle before the batch's completion"
    )
    func delegateFirstForFinishedAndFailedURLs() async throws {
        let rig = Rig()
        let urls = (0..<6).map { testURL("order\($0)") }
        for url in urls.prefix(3) { rig.serve(url) }  // the other three are unscripted: the loader answers 404
        let prefetcher = ImagePrefetcher(manager: rig.manager, maxConcurrentPrefetchCount: 2)
        prefetcher.context = rig.context()
        let log = Locked<[String]>([])
        let delegate = LoggingDelegate(log: log)
        prefetcher.delegate = delegate
        let outcomes = Locked<[String: String]>([:])
        prefetcher.prefetch(
            urls, progress: { finished, _ in log.withLock { $0.append("progress \(finished)") } },
            perURL: { report in
                outcomes.withLock { $0[report.url.lastPathComponent] = Self.outcomeName(report.outcome) }
                log.withLock { $0.append("perURL \(report.url.lastPathComponent)") }
            },
            completed: { _, _ in log.withLock { $0.append("completed") } })
        #expect(await waitUntil { log.value.last == "completed" })

        let events = log.value
        #expect(events.count == urls.count * 3 + 2, "\(events)")
        for (index, chunk) in stride(from: 0, to: urls.count * 3, by: 3).enumerated() {
            let name = events[chunk].replacingOccurrences(of: "delegate ", with: "")
            #expect(
                Array(events[chunk..<chunk + 3]) == ["delegate \(name)", "perURL \(name)", "progress \(index + 1)"],
                "URL \(index + 1) (\(outcomes.value[name] ?? "?")): \(events)")
        }
        #expect(Array(events.suffix(2)) == ["idle", "completed"])
        #expect(Set(outcomes.value.values) == ["finished", "failed"])
    }

    @Test("a cancelled batch: the delegate hears about every skipped URL before its per-URL report")
    func delegateFirstForSkippedURLs() async throws {
        let rig = Rig()
        let urls = (0..<4).map { testURL("skip\($0)") }
        for url in urls { rig.serve(url) }
        rig.loader.hold()
        let prefetcher = ImagePrefetcher(manager: rig.manager, maxConcurrentPrefetchCount: 2)
        prefetcher.context = rig.context()
        let log = Locked<[String]>([])
        let delegate = LoggingDelegate(log: log)
        prefetcher.delegate = delegate
        let token = prefetcher.prefetch(
            urls, progress: { finished, _ in log.withLock { $0.append("progress \(finished)") } },
            perURL: { report in log.withLock { $0.append("perURL \(report.url.lastPathComponent)") } },
            completed: { _, _ in log.withLock { $0.append("completed") } })
        #expect(await waitUntil { rig.loader.requestCount == 2 })
        token.cancel()
        let events = log.value
        let expected =
            urls.flatMap { ["delegate \($0.lastPathComponent)", "perURL \($0.lastPathComponent)"] } + ["idle"]
        #expect(events.count == expected.count, "\(events)")
        // The URLs report in the order the cancel met them; each pair keeps the delegate first.
        for chunk in stride(from: 0, to: urls.count * 2, by: 2) where chunk + 1 < events.count {
            let name = events[chunk].replacingOccurrences(of: "delegate ", with: "")
            #expect(events[chunk].hasPrefix("delegate ") && events[chunk + 1] == "perURL \(name)", "\(events)")
        }
        #expect(events.last == "idle")
        rig.loader.releaseAll()
        #expect(await waitUntil { !rig.manager.isRunning })
    }
}
