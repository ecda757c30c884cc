import Foundation
import HTTPLoader
import ImageCore
import Testing

/// Concurrency limit, ordering, priorities and coalescing, as seen by the server.
@Suite struct HTTPLoaderSchedulingTests {
    static let body = pngLikeBytes(count: 200)

    @Test func thousandRequestsNeverExceedSixInFlight() async throws {
        let body = Self.body
        try await withServer(script: { _ in .chunked(headers: [], parts: [body], intervalMilliseconds: 1) }) {
            server, loader in
            let recorders = (0..<1000).map { startLoad(loader, server.url("/img/\($0).png")).recorder }
            var successes = 0
            for recorder in recorders where (try? await recorder.result(within: 60)?.get()) != nil { successes += 1 }
            #expect(successes == 1000)
            let stats = server.stats.value
            #expect(stats.requests.count == 1000)
            #expect(stats.maxInFlight <= 6)
            #expect(stats.maxInFlight > 1)  // the limit is a limit, not serialization
            #expect(stats.connectionsOpened <= 8)  // connections are reused
        }
    }

    /// Blocks the single slot with `/gate`, queues `paths` with their options, opens the gate and returns the order
    /// in which the server saw them.
    private func serverOrder(
        order: DownloadExecutionOrder, _ paths: [(String, ImageOptions)]
    ) async throws -> [String] {
        var seen: [String] = []
        let body = Self.body
        try await withServer(
            loader: {
                $0.maxConcurrentDownloads = 1
                $0.executionOrder = order
            },
            script: { request in
                request.path == "/gate" ? .hold("gate", then: .respond(body: body)) : .respond(body: body)
            }
        ) { server, loader in
            let blocker = startLoad(loader, server.url("/gate")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let recorders = paths.map { startLoad(loader, server.url($0.0), options: $0.1).recorder }
            #expect(loader.activeTransferCount.queued == paths.count)
            server.open("gate")
            #expect(await blocker.result()?.value != nil)
            for recorder in recorders { #expect(await recorder.result()?.value != nil) }
            seen = server.stats.value.requests.map(\.path)
        }
        return seen
    }

    @Test func fifoIsTheDefaultOrder() async throws {
        let seen = try await serverOrder(order: .fifo, [("/a", []), ("/b", []), ("/c", [])])
        #expect(seen == ["/gate", "/a", "/b", "/c"])
    }

    @Test func lifoStartsTheNewestFirst() async throws {
        let seen = try await serverOrder(order: .lifo, [("/a", []), ("/b", []), ("/c", [])])
        #expect(seen == ["/gate", "/c", "/b", "/a"])
    }

    @Test func highPriorityGoesFirstAndLowPriorityLast() async throws {
        let seen = try await serverOrder(
            order: .fifo, [("/low", .lowPriority), ("/n1", []), ("/high", .highPriority), ("/n2", [])])
        #expect(seen == ["/gate", "/high", "/n1", "/n2", "/low"])
    }

    @Test func hundredIdenticalRequestsAreOneTransfer() async throws {
        let body = pngLikeBytes(count: 100_000)
        try await withServer(script: { _ in
            .hold("go", then: .respond(headers: [("Content-Type", "image/png")], body: body))
        }) {
            server, loader in
            let recorders = (0..<100).map { _ in startLoad(loader, server.url("/same.png")).recorder }
            #expect(await server.waitUntil { $0.requests.count == 1 })
            #expect(loader.activeTransferCount.running == 1)
            server.open("go")
            for recorder in recorders {
                let loaded = try #require(try await recorder.result()?.get())
                #expect(loaded.data.count == body.count)
                #expect(recorder.completionCount == 1)
            }
            #expect(recorders.allSatisfy { $0.progress.last?.receivedBytes == body.count })
            #expect(server.requests(to: "/same.png").count == 1)
        }
    }

    @Test func headersThatChangeTheResponseSplitTransfers() async throws {
        let body = Self.body
        try await withServer(script: { _ in .hold("go", then: .respond(body: body)) }) { server, loader in
            var context = ImageContext()
            context.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request[header: "Accept"] = "image/webp"
                return request
            }
            let plain = startLoad(loader, server.url("/v.png")).recorder
            let webp = startLoad(loader, server.url("/v.png"), context: context).recorder
            #expect(await server.waitUntil { $0.requests.count == 2 })
            server.open("go")
            #expect(await plain.result()?.value != nil)
            #expect(await webp.result()?.value != nil)
            #expect(Set(server.requests(to: "/v.png").compactMap { $0.header("Accept") }).count == 2)
        }
    }

    @Test func cancellingOneCoalescedCallerLeavesTheOthers() async throws {
        let body = pngLikeBytes(count: 5000)
        try await withServer(script: { _ in .hold("go", then: .respond(body: body)) }) { server, loader in
            let first = startLoad(loader, server.url("/c.png"))
            let second = startLoad(loader, server.url("/c.png"))
            let third = startLoad(loader, server.url("/c.png"))
            #expect(await server.waitUntil { $0.requests.count == 1 })
            second.operation.cancel()
            second.operation.cancel()  // idempotent
            // Completed at once, before the server answered.
            let cancelled = try #require(await second.recorder.result(within: 2)?.error)
            #expect(cancelled.code == .cancelled)
            #expect(second.operation.isCancelled)
            server.open("go")
            #expect(await first.recorder.result()?.value?.data == Data(body))
            #expect(await third.recorder.result()?.value?.data == Data(body))
            // One serial queue delivers a transfer's callbacks in order: anything still due to the cancelled caller
            // would have been delivered before the others' completions.
            #expect(second.recorder.completionCount == 1)
            #expect(second.recorder.progressAfterCompletion == 0)
            #expect(server.stats.value.abandonedResponses == 0)
            #expect(server.requests(to: "/c.png").count == 1)
        }
    }

    @Test func cancellingTheLastCallerClosesTheConnection() async throws {
        // A long read timeout, so only the cancellation can close the connection within the wait below.
        try await withServer(loader: { $0.timeout = 60 }, script: { _ in .hold("never", then: .respond()) }) {
            server, loader in
            let first = startLoad(loader, server.url("/x.png"))
            let second = startLoad(loader, server.url("/x.png"))
            #expect(await server.waitUntil { $0.requests.count == 1 })
            first.operation.cancel()
            #expect(await first.recorder.result(within: 2)?.error?.code == .cancelled)
            #expect(server.stats.value.abandonedResponses == 0)  // one caller still waits
            second.operation.cancel()
            #expect(await second.recorder.result(within: 2)?.error?.code == .cancelled)
            #expect(await server.waitUntil(seconds: 5) { $0.abandonedResponses == 1 && $0.connectionsClosed == 1 })
            // The slot came back: a new load runs.
            #expect(await server.waitUntil { _ in loader.activeTransferCount.running == 0 })
        }
    }

    @Test func cancellingAQueuedTransferNeverSendsIt() async throws {
        let body = Self.body
        try await withServer(
            loader: { $0.maxConcurrentDownloads = 1 },
            script: { request in
                request.path == "/gate" ? .hold("gate", then: .respond(body: body)) : .respond(body: body)
            }
        ) { server, loader in
            let blocker = startLoad(loader, server.url("/gate")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let queued = startLoad(loader, server.url("/queued"))
            let after = startLoad(loader, server.url("/after")).recorder
            queued.operation.cancel()
            #expect(await queued.recorder.result(within: 2)?.error?.code == .cancelled)
            #expect(loader.activeTransferCount.queued == 1)
            server.open("gate")
            #expect(await blocker.result()?.value != nil)
            #expect(await after.result()?.value != nil)
            #expect(server.stats.value.requests.map(\.path) == ["/gate", "/after"])
        }
    }

    @Test func aLateJoinerGetsEveryByte() async throws {
        let body = pngLikeBytes(count: 200_000)
        try await withServer(script: { _ in
            .splitAtGate("rest", headers: [("Content-Type", "image/png")], body: body, split: 70_000)
        }) { server, loader in
            let early = startLoad(loader, server.url("/late.png"), options: .progressiveLoad)
            #expect(await early.recorder.waitForProgress { ($0.last?.receivedBytes ?? 0) >= 70_000 })
            let late = startLoad(loader, server.url("/late.png"), options: .progressiveLoad)
            // The joiner is told at once about the bytes already there, with all of them for decoding.
            #expect(await late.recorder.waitForProgress(within: 2) { !$0.isEmpty })
            let replay = try #require(late.recorder.progress.first)
            #expect(replay.receivedBytes >= 70_000)
            #expect(replay.partialData == Data(body.prefix(replay.receivedBytes)))
            server.open("rest")
            #expect(await early.recorder.result()?.value?.data == Data(body))
            #expect(await late.recorder.result()?.value?.data == Data(body))
            #expect(server.requests(to: "/late.png").count == 1)
        }
    }

    @Test func progressiveLoadsCarryThePartialBytesThrottled() async throws {
        let body = pngLikeBytes(count: 600_000)
        let parts = stride(from: 0, to: body.count, by: 8192).map { Array(body[$0..<min($0 + 8192, body.count)]) }
        try await withServer(script: { _ in
            .chunked(headers: [("Content-Type", "image/png")], parts: parts, intervalMilliseconds: 0)
        }) { server, loader in
            let (_, recorder) = startLoad(loader, server.url("/p.png"), options: .progressiveLoad)
            let loaded = try #require(try await recorder.result()?.get())
            #expect(loaded.data == Data(body))
            let reports = recorder.progress
            #expect(reports.count >= 2)
            // Throttled: 74 chunks arrive, far fewer reports go out (≥ 64 KiB or 50 ms apart, plus first and last).
            #expect(reports.count < parts.count)
            #expect(reports.last?.receivedBytes == body.count)
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.receivedBytes < $1.receivedBytes })
            for report in reports {
                let partial = try #require(report.partialData)
                #expect(partial.count == report.receivedBytes)
                #expect(partial == Data(body.prefix(report.receivedBytes)))
            }
            #expect(recorder.progressAfterCompletion == 0)
        }
    }
}
