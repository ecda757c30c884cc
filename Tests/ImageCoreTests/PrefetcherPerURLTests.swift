import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// Issue 25 item 4: per-URL reports, the delegate and the running tokens, as SDWebImage's prefetcher has them.
@Suite struct PrefetcherPerURLTests {
    /// Records every delegate call, and whether two ever overlapped.
    private final class Delegate: ImagePrefetcherDelegate {
        enum Call: Sendable {
            case url(PrefetchURLReport)
            case finished(total: Int, skipped: Int)
        }
        private let state = Locked<(calls: [Call], busy: Bool, overlaps: Int)>(([], false, 0))
        var calls: [Call] { state.value.calls }
        var overlaps: Int { state.value.overlaps }
        var urlReports: [PrefetchURLReport] {
            calls.compactMap { if case .url(let report) = $0 { report } else { nil } }
        }
        var finishes: [(total: Int, skipped: Int)] {
            calls.compactMap { if case .finished(let total, let skipped) = $0 { (total, skipped) } else { nil } }
        }

        private func record(_ call: Call) {
            state.withLock { state in
                if state.busy { state.overlaps += 1 }
                state.busy = true
                state.calls.append(call)
            }
            state.withLock { $0.busy = false }
        }

        func imagePrefetcher(_ prefetcher: ImagePrefetcher, didPrefetch report: PrefetchURLReport) {
            record(.url(report))
        }

        func imagePrefetcher(
            _ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int
        ) {
            record(.finished(total: totalCount, skipped: skippedCount))
        }
    }

    private func prefetcher(_ rig: Rig, max: Int = 3) -> ImagePrefetcher {
        let prefetcher = ImagePrefetcher(manager: rig.manager, maxConcurrentPrefetchCount: max)
        prefetcher.context = rig.context()
        return prefetcher
    }

    @Test(
        "SDWebImagePrefetcherDelegate imagePrefetcher:didPrefetchURL:finishedCount:totalCount: — every URL reports once, in order, finished or failed; didFinishWithTotalCount:skippedCount: comes last"
    )
    func everyURLReportsOnceThenTheDelegateHearsTheEnd() async throws {
        let rig = Rig()
        let urls = (0..<8).map { testURL("u\($0)") }
        for url in urls.prefix(6) { rig.serve(url) }  // the last two are unscripted: the loader answers 404
        let prefetcher = prefetcher(rig)
        let delegate = Delegate()
        prefetcher.delegate = delegate
        let perURL = Locked<[PrefetchURLReport]>([])
        let completed = Locked<(Int, Int)?>(nil)
        prefetcher.prefetch(
            urls, perURL: { report in perURL.withLock { $0.append(report) } },
            completed: { finished, skipped in completed.withLock { $0 = (finished, skipped) } })
        // The delegate hears that the prefetcher is idle before the batch's completion (SDWebImage's order).
        #expect(await waitUntil { delegate.finishes.count == 1 && completed.value != nil })

        let reports = perURL.value
        #expect(reports.count == 8)
        #expect(Set(reports.map(\.url)) == Set(urls), "each URL reports exactly once")
        #expect(reports.map(\.finishedCount) == Array(1...8))
        #expect(reports.allSatisfy { $0.totalCount == 8 })
        for (index, report) in reports.enumerated() {
            let skippedSoFar = reports[...index].filter(\.outcome.isSkipped).count
            #expect(report.skippedCount == skippedSoFar)
            switch report.outcome {
            case .finished(let result): #expect(urls.prefix(6).contains(report.url) && result.isFinal)
            case .failed(let error):
                #expect(urls.suffix(2).contains(report.url) && error.code == .invalidDownloadStatusCode)
            case .skipped: Issue.record("nothing was cancelled")
            }
        }
        #expect(completed.value.map { [$0.0, $0.1] } == [8, 2], "SDWebImage's skippedCount counts the failures")
        #expect(delegate.urlReports.map(\.finishedCount) == Array(1...8))
        #expect(delegate.urlReports.map(\.url) == reports.map(\.url), "the delegate hears the URLs in the same order")
        #expect(delegate.finishes.map { [$0.total, $0.skipped] } == [[8, 2]])
        if case .finished = delegate.calls.last {} else { Issue.record("didFinish must come last") }
        #expect(delegate.overlaps == 0)
        #expect(prefetcher.runningTokenCount == 0)
    }

    @Test(
        "SDWebImagePrefetchToken cancel: every URL not yet reported is skipped at cancel time, progress and completion stop"
    )
    func cancellingABatchSkipsItsRemainingURLsAtOnce() async throws {
        let rig = Rig()
        let urls = (0..<5).map { testURL("c\($0)") }
        for url in urls { rig.serve(url) }
        rig.loader.hold()
        let prefetcher = prefetcher(rig, max: 2)
        let delegate = Delegate()
        prefetcher.delegate = delegate
        let perURL = Locked<[PrefetchURLReport]>([])
        let progress = Locked(0)
        let completed = Locked(false)
        let token = prefetcher.prefetch(
            urls, progress: { _, _ in progress.withLock { $0 += 1 } },
            perURL: { report in perURL.withLock { $0.append(report) } },
            completed: { _, _ in completed.withLock { $0 = true } })
        #expect(await waitUntil { rig.loader.requestCount == 2 })
        #expect(prefetcher.runningTokenCount == 1)

        token.cancel()
        // Reported before cancel() returned: no load had ended, so this thread delivered them.
        let reports = perURL.value
        #expect(reports.count == 5)
        #expect(reports.allSatisfy { if case .skipped = $0.outcome { true } else { false } })
        #expect(Set(reports.map(\.url)) == Set(urls))
        #expect(reports.map(\.finishedCount) == Array(1...5) && reports.map(\.skippedCount) == Array(1...5))
        #expect(token.isCancelled && token.finishedCount == 5 && token.skippedCount == 5)
        #expect(prefetcher.runningTokenCount == 0)
        #expect(delegate.finishes.map { [$0.total, $0.skipped] } == [[5, 5]])

        rig.loader.releaseAll()
        #expect(await waitUntil { !rig.manager.isRunning })
        prefetcher.startQueue.sync {}
        #expect(rig.loader.requestCount == 2, "the queued URLs never started")
        #expect(perURL.value.count == 5, "the cancelled loads ending later report nothing more")
        #expect(progress.value == 0 && !completed.value)
        token.cancel()
        #expect(perURL.value.count == 5 && delegate.finishes.count == 1, "cancel is idempotent")
    }

    @Test(
        "SDWebImagePrefetcher running tokens: counted until each batch ends or is cancelled; the delegate hears the end once, with every batch's totals"
    )
    func runningTokensAndOneIdleReportForOverlappingBatches() async throws {
        let rig = Rig()
        let first = (0..<3).map { testURL("f\($0)") }
        let second = (0..<4).map { testURL("s\($0)") }
        for url in first + second { rig.serve(url) }
        rig.loader.hold()
        let prefetcher = prefetcher(rig, max: 8)
        let delegate = Delegate()
        prefetcher.delegate = delegate
        let firstDone = Locked<(Int, Int)?>(nil)
        prefetcher.prefetch(first, completed: { f, s in firstDone.withLock { $0 = (f, s) } })
        let secondToken = prefetcher.prefetch(second)
        #expect(prefetcher.runningTokenCount == 2)
        #expect(await waitUntil { rig.loader.requestCount == 7 })
        // Let the first batch finish, keep the second held.
        let held = rig.loader.requests.filter { request in second.contains(request.url) }
        #expect(held.count == 4)
        rig.loader.releaseAll()  // answers all seven; cancel the second batch before its answers land
        secondToken.cancel()
        #expect(await waitUntil { firstDone.value != nil && prefetcher.runningTokenCount == 0 })
        #expect(await waitUntil { delegate.finishes.count == 1 })
        #expect(delegate.finishes.first?.total == 7, "one idle report spans both batches")
        let skipped = delegate.finishes.first?.skipped ?? -1
        #expect(skipped == secondToken.skippedCount && skipped >= 0 && skipped <= 4)
        #expect(delegate.urlReports.map(\.finishedCount) == Array(1...7))
        #expect(delegate.urlReports.allSatisfy { $0.totalCount == 7 })
        #expect(delegate.overlaps == 0)

        // A new batch after idle starts a new count.
        let third = [testURL("t")]
        rig.serve(third[0])
        prefetcher.prefetch(third)
        #expect(await waitUntil { delegate.finishes.count == 2 })
        #expect(delegate.finishes.last.map { [$0.total, $0.skipped] } == [1, 0])
        #expect(delegate.urlReports.last?.finishedCount == 1 && delegate.urlReports.last?.totalCount == 1)
    }

    @Test(
        "SDWebImagePrefetcher skippedCount: a load cancelled elsewhere (ImageManager.cancelAll) is skipped, and the batch still completes"
    )
    func aLoadCancelledByTheManagerIsSkipped() async throws {
        let rig = Rig()
        let urls = (0..<2).map { testURL("m\($0)") }
        for url in urls { rig.serve(url) }
        rig.loader.hold()
        let prefetcher = prefetcher(rig)
        let perURL = Locked<[PrefetchURLReport]>([])
        let completed = Locked<(Int, Int)?>(nil)
        prefetcher.prefetch(
            urls, perURL: { report in perURL.withLock { $0.append(report) } },
            completed: { f, s in completed.withLock { $0 = (f, s) } })
        #expect(await waitUntil { rig.loader.requestCount == 2 })
        rig.manager.cancelAll()
        #expect(await waitUntil { completed.value != nil })
        #expect(completed.value.map { [$0.0, $0.1] } == [2, 2])
        #expect(perURL.value.allSatisfy { if case .skipped = $0.outcome { true } else { false } })
        rig.loader.releaseAll()
    }

    @Test(
        "SDWebImagePrefetcher progress and delegate order: with loads ending on many threads, every batch counts 1, 2, 3 … and no two reports overlap"
    )
    func reportsStayInOrderWhenLoadsEndConcurrently() async throws {
        let rig = Rig()
        let concurrent = DispatchQueue(label: "prefetch-callbacks", attributes: .concurrent)
        let batches = (0..<4).map { batch in (0..<40).map { testURL("o\(batch)x\($0)") } }
        for url in batches.joined() where !url.absoluteString.contains("x7-") { rig.serve(url) }
        let prefetcher = ImagePrefetcher(manager: rig.manager, maxConcurrentPrefetchCount: 8)
        prefetcher.context = rig.context([.callbackQueue: CallbackQueue.dispatch(concurrent)])
        let delegate = Delegate()
        prefetcher.delegate = delegate
        let sequences = Locked([[Int]](repeating: [], count: batches.count))
        let progressSequences = Locked([[Int]](repeating: [], count: batches.count))
        let completions = Locked([Int: (Int, Int)]())
        for (index, urls) in batches.enumerated() {
            prefetcher.prefetch(
                urls, progress: { finished, _ in progressSequences.withLock { $0[index].append(finished) } },
                perURL: { report in sequences.withLock { $0[index].append(report.finishedCount) } },
                completed: { finished, skipped in
                    // The completion comes after every report of its batch.
                    let seen = sequences.withLock { $0[index].count }
                    completions.withLock { $0[index] = seen == finished ? (finished, skipped) : (-1, -1) }
                })
        }
        #expect(await waitUntil(timeout: 20) { delegate.finishes.count == 1 && completions.value.count == 4 })
        for index in batches.indices {
            #expect(sequences.value[index] == Array(1...40))
            #expect(progressSequences.value[index] == Array(1...40))
            #expect(completions.value[index].map { [$0.0, $0.1] } == [40, 1], "x7 of each batch fails")
        }
        #expect(delegate.urlReports.map(\.finishedCount) == Array(1...160))
        #expect(delegate.finishes.map { [$0.total, $0.skipped] } == [[160, 4]])
        #expect(delegate.overlaps == 0)
    }
}
