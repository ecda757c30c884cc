import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import ImageTestSupport
import NIOPosix
import Testing

/// The controls SDWebImage, Kingfisher and Nuke users reach for (issue 25, items 1 and 7), written from the
/// peers' documented behaviour and run through the public API against a real local server.
@Suite struct HTTPLoaderControlTests {
    static let body = pngLikeBytes(count: 300)

    /// A loader with one slot, held by `/gate` until the test opens gate "gate"; every other path answers at once.
    static func oneSlot(
        _ body: @escaping @Sendable (TestHTTPServer, HTTPLoader) async throws -> Void
    ) async throws {
        let image = Self.body
        try await withServer(
            loader: { $0.maxConcurrentDownloads = 1 },
            script: { request in
                request.path == "/gate" ? .hold("gate", then: .respond(body: image)) : .respond(body: image)
            }, body)
    }

    // MARK: Cancelling

    @Test(
        "SDWebImageDownloader.cancelAllDownloads: every running and queued download ends cancelled, the downloader keeps working"
    )
    func cancelAllDownloads() async throws {
        try await withServer(
            loader: { $0.maxConcurrentDownloads = 1 },
            script: { request in
                request.path == "/running" ? .hold("never", then: .respond()) : .respond(body: Self.body)
            }
        ) { server, loader in
            let running = startLoad(loader, server.url("/running"))
            let joined = startLoad(loader, server.url("/running"))
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let queued = startLoad(loader, server.url("/queued"))
            #expect(loader.activeTransferCount == (1, 1))

            #expect(loader.cancelAllDownloads() == 2)
            for load in [running, joined, queued] {
                let error = try #require(await load.recorder.result(within: 5)?.error)
                #expect(error.code == .cancelled && error.stage == .download)
                #expect(load.recorder.completionCount == 1)
            }
            #expect(await server.waitUntil { $0.abandonedResponses == 1 }, "the running request's connection closed")
            #expect(await server.waitUntil { _ in loader.activeTransferCount == (0, 0) })
            // Not shut down: the next request runs, and the queued one was never sent.
            #expect(await load(loader, server.url("/after"))?.value?.data == Data(Self.body))
            #expect(server.stats.value.requests.map(\.path) == ["/running", "/after"])
            #expect(loader.cancelAllDownloads() == 0)
        }
    }

    @Test(
        "Kingfisher ImageDownloader.cancel(url:): only that URL's downloads end cancelled, whatever their headers or deadline"
    )
    func cancelDownloadsOfOneURL() async throws {
        try await withServer(script: { _ in .hold("go", then: .respond(body: Self.body)) }) { server, loader in
            var short = ImageContext()
            short.httpTransferTimeout = 30
            let doomed = [
                startLoad(loader, server.url("/x.png")), startLoad(loader, server.url("/x.png")),
                startLoad(loader, server.url("/x.png"), context: short),
            ]
            let survivor = startLoad(loader, server.url("/y.png"))
            #expect(await server.waitUntil { $0.requests.count == 3 })
            #expect(loader.cancelDownloads(for: server.url("/x.png")) == 2)
            for load in doomed { #expect(await load.recorder.result(within: 5)?.error?.code == .cancelled) }
            server.open("go")
            #expect(await survivor.recorder.result()?.value?.data == Data(Self.body))
        }
    }

    // MARK: Priority

    @Test("Nuke ImageTask.priority: changing an issued load's priority reorders the waiting downloads")
    func priorityReordersTheQueue() async throws {
        try await Self.oneSlot { server, loader in
            let blocker = startLoad(loader, server.url("/gate")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let a = startLoad(loader, server.url("/a"))
            let b = startLoad(loader, server.url("/b"))
            let c = startLoad(loader, server.url("/c"), options: .lowPriority)
            let priorities = try [a, c].map { try #require($0.operation as? any PrioritizableOperation) }
            #expect(priorities[1].priority == .low, "the options give the initial priority")
            priorities[0].priority = .low
            priorities[1].priority = .high
            #expect(priorities[1].priority == .high)
            server.open("gate")
            #expect(await blocker.result()?.value != nil)
            for load in [a, b, c] { #expect(await load.recorder.result()?.value != nil) }
            #expect(server.stats.value.requests.map(\.path) == ["/gate", "/c", "/b", "/a"])
        }
    }

    @Test(
        "Nuke ImageTask.priority: a shared download runs at the highest priority of its callers, also when one leaves")
    func aSharedDownloadRunsAtItsCallersHighestPriority() async throws {
        try await Self.oneSlot { server, loader in
            let blocker = startLoad(loader, server.url("/gate")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let normal = startLoad(loader, server.url("/normal"))
            let shared = [startLoad(loader, server.url("/shared")), startLoad(loader, server.url("/shared"))]
            let raised = try #require(shared[0].operation as? any PrioritizableOperation)
            let other = startLoad(loader, server.url("/other"), options: .lowPriority)
            let later = try #require(other.operation as? any PrioritizableOperation)
            raised.priority = .high  // /shared now before /normal
            later.priority = .high
            shared[0].operation.cancel()  // its high priority leaves with it: /shared is normal again
            server.open("gate")
            #expect(await blocker.result()?.value != nil)
            #expect(await shared[0].recorder.result()?.error?.code == .cancelled)
            for load in [normal, shared[1], other] { #expect(await load.recorder.result()?.value != nil) }
            #expect(server.stats.value.requests.map(\.path) == ["/gate", "/other", "/normal", "/shared"])
        }
    }

    @Test("Nuke ImageTask.priority: a running download's priority change reaches its transfer")
    func priorityReachesARunningTransfer() async throws {
        try await withServer(script: { _ in .hold("go", then: .respond(body: Self.body)) }) { server, loader in
            let stream = loader.events()
            let load = startLoad(loader, server.url("/r.png"))
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let operation = try #require(load.operation as? any PrioritizableOperation)
            operation.priority = .high
            operation.priority = .high  // no change, no event
            server.open("go")
            #expect(await load.recorder.result()?.value != nil)
            // Up to the transfer's ending, whichever it is: a load that failed must fail this test, not hang it.
            let events = await readEvents(stream) { $0.kind.endsTransfer }
            let seen = events.compactMap { event -> DownloadPriority? in
                if case .priorityChanged(let priority) = event.kind { return priority }
                return nil
            }
            #expect(seen == [.high])
            #expect(events.last.map { if case .finished = $0.kind { true } else { false } } == true)
        }
    }

    @Test("Nuke ImageTask.priority: ImageManager.loadImage's operation passes its priority on to the shared download")
    func managerOperationPriorityReachesTheLoader() async throws {
        let image = [UInt8](TestCoder.data(width: 4, height: 4))
        try await withServer(
            loader: { $0.maxConcurrentDownloads = 1 },
            script: { request in
                let response = ServerAction.respond(headers: [("Content-Type", "image/x-test")], body: image)
                return request.path == "/gate" ? .hold("gate", then: response) : response
            }
        ) { server, loader in
            let manager = ImageManager(
                cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [TestCoder()]))
            let done = Locked(0)
            func start(_ path: String, _ options: ImageOptions = []) -> ImageLoadOperation {
                manager.loadImage(with: server.url(path), options: options.union(.fromLoaderOnly)) { result in
                    if (try? result.get())?.isFinal != false { done.withLock { $0 += 1 } }
                }
            }
            _ = start("/gate")
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let first = start("/first")
            let second = start("/second", .lowPriority)
            #expect(second.priority == .low)
            let joiner = start("/second", .lowPriority)
            #expect(await server.waitUntil { _ in loader.activeTransferCount.queued == 2 })
            joiner.priority = .high  // one of the two loads of /second: the download runs at high
            first.priority = .low
            #expect(joiner.priority == .high && first.priority == .low)
            server.open("gate")
            #expect(await server.waitUntil { _ in done.value == 4 })
            #expect(server.stats.value.requests.map(\.path) == ["/gate", "/second", "/first"])
        }
    }

    // MARK: Responses the caller rejects

    @Test(
        "SDWebImageDownloaderResponseModifier: returning nil fails the load with invalidDownloadResponse and its response"
    )
    func aResponseModifierReturningNilFailsTheLoad() async throws {
        try await withServer(script: { _ in
            .respond(headers: [("Content-Type", "image/png"), ("X-Reason", "embargoed")], body: Self.body)
        }) { server, loader in
            var context = ImageContext()
            context.downloadResponseModifier = BlockResponseModifier { response in
                response.headers["x-reason"] == nil ? response : nil
            }
            let refused = startLoad(loader, server.url("/r.png"), context: context)
            let accepted = startLoad(loader, server.url("/r.png"))
            let error = try #require(await refused.recorder.result()?.error)
            #expect(error.code == .invalidDownloadResponse && error.stage == .download)
            #expect(error.response?.statusCode == 200)
            #expect(error.response?.headers["x-reason"] == "embargoed")
            #expect(await accepted.recorder.result()?.value?.data == Data(Self.body), "the refusal was its own")
            #expect(server.requests(to: "/r.png").count == 1)
        }
        try await withServer(
            loader: { $0.responseModifier = BlockResponseModifier { _ in nil } },
            script: { _ in .respond(body: Self.body) }
        ) { server, loader in
            let error = try #require(await load(loader, server.url("/all.png"))?.error)
            #expect(error.code == .invalidDownloadResponse && error.response?.statusCode == 200)
        }
    }

    @Test(
        "SDWebImageErrorDownloadResponseKey: a failed load reports the HTTP response it got, through ImageManager too")
    func aFailedLoadReportsItsResponse() async throws {
        try await withServer(script: { request in
            switch request.path {
            case "/gone.png": .respond(status: .notFound, headers: [("X-Reason", "deleted"), ("ETag", "\"e1\"")])
            case "/text.png": .respond(headers: [("Content-Type", "text/html")], body: Array("<html>".utf8))
            default: .reset
            }
        }) { server, loader in
            let manager = ImageManager(cache: RecordingCache(), loader: loader)
            do throws(ImageError) {
                _ = try await manager.loadImage(with: server.url("/gone.png"))
                Issue.record("loaded a 404")
            } catch {
                #expect(error.code == .invalidDownloadStatusCode && error.statusCode == 404)
                #expect(error.response?.statusCode == 404)
                #expect(error.response?.headers["x-reason"] == "deleted")
                #expect(error.response?.etag == "\"e1\"")
            }
            // Refused by the content-type rule: the response says why.
            var strict = HTTPLoaderConfiguration()
            strict.acceptableContentTypes = ["image/*"]
            let picky = HTTPLoader(configuration: strict)
            let typed = try #require(await load(picky, server.url("/text.png"))?.error)
            #expect(typed.code == .invalidDownloadContentType && typed.response?.contentType == "text/html")
            try await picky.shutdown()
            // No response at all: nothing to report.
            let reset = try #require(await load(loader, server.url("/reset.png"))?.error)
            #expect(reset.code == .downloadFailed && reset.response == nil)
        }
    }

    // MARK: Threads

    @Test func callbacksRunOnTheEventLoopByDefaultInOrderAndNeverUnderALock() async throws {
        try await withServer(script: { _ in .respond(body: Self.body) }) { server, loader in
            let seen = Locked<[String]>([])
            let operation = loader.requestImage(
                with: server.url("/t.png"), options: [], context: ImageContext(),
                progress: { _ in seen.withLock { $0.append(Self.onEventLoop ? "progress" : "progress elsewhere") } },
                completion: { _ in
                    seen.withLock { $0.append(Self.onEventLoop ? "completion" : "completion elsewhere") }
                    // Re-entering the loader from a callback would deadlock if a lock were held.
                    _ = loader.requestImage(
                        with: server.url("/u.png"), options: [], context: ImageContext(), progress: nil
                    ) { _ in seen.withLock { $0.append("nested") } }
                    _ = loader.activeTransferCount
                })
            #expect(await server.waitUntil { _ in seen.value.last == "nested" })
            let order = seen.value
            #expect(order.first == "progress" && order.dropLast(2).allSatisfy { $0 == "progress" })
            #expect(order.suffix(2) == ["completion", "nested"])
            operation.cancel()  // after the completion: no effect, no second call
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(seen.value == order)
        }
        let queue = DispatchQueue(label: "test.callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        try await withServer(loader: { $0.callbackQueue = queue }, script: { _ in .respond(body: Self.body) }) {
            server, loader in
            let places = Locked<[Bool]>([])
            let finished = Locked(false)
            _ = loader.requestImage(
                with: server.url("/q.png"), options: [], context: ImageContext(),
                progress: { _ in places.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) } },
                completion: { _ in
                    places.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) }
                    finished.withLock { $0 = true }
                })
            #expect(await server.waitUntil { _ in finished.value })
            #expect(places.value.count >= 2 && places.value.allSatisfy { $0 })
        }
    }

    static var onEventLoop: Bool { MultiThreadedEventLoopGroup.currentEventLoop != nil }
}
