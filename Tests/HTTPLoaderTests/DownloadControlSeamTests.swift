import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32, defects 4–7: the loader's cancel controls and a load's priority meet the manager's jobs and its admission
/// queue. One registry (``DownloadControl``) ends them together; each test reproduces the case on c19952b.
@Suite(.serialized) struct DownloadControlSeamTests {
    static let image = [UInt8](TestCoder.data(width: 4, height: 4))
    static let response = ServerAction.respond(headers: [("Content-Type", "image/x-test")], body: image)

    static func manager(_ loader: HTTPLoader, downloadsAhead: Int? = nil) -> ImageManager {
        let manager = ImageManager(
            cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [TestCoder()]))
        if let downloadsAhead { manager.maxDownloadsAheadOfDecoding = downloadsAhead }
        return manager
    }

    /// Starts a load through `manager` and records its final result.
    static func start(
        _ manager: ImageManager, _ url: URL, options: ImageOptions = [], context: ImageContext? = nil
    ) -> (operation: ImageLoadOperation, final: Locked<Result<ImageResult, ImageError>?>) {
        let final = Locked<Result<ImageResult, ImageError>?>(nil)
        let operation = manager.loadImage(with: url, options: options.union(.fromLoaderOnly), context: context) {
            result in
            if (try? result.get())?.isFinal == false { return }
            final.withLock { $0 = result }
        }
        return (operation, final)
    }

    static func finished(_ load: Locked<Result<ImageResult, ImageError>?>, within seconds: Double = 10) async -> Result<
        ImageResult, ImageError
    >? {
        _ = await waitUntil(timeout: seconds) { load.value != nil }
        return load.value
    }

    @Test("a load made after cancelAllDownloads() returned gets a new download, even with the callback queue busy")
    func aLoadAfterCancelAllGetsANewDownload() async throws {
        let callbacks = DispatchQueue(label: "busy-callbacks")
        let first = Locked(true)
        try await withServer(
            loader: { $0.callbackQueue = callbacks },
            script: { _ in
                let isFirst = first.withLock { value -> Bool in
                    defer { value = false }
                    return value
                }
                return isFirst ? .hold("first", then: Self.response) : Self.response
            }
        ) { server, loader in
            for useURL in [false, true] {
                first.withLock { $0 = true }
                let manager = Self.manager(loader)
                let url = server.url(useURL ? "/by-url.timg" : "/all.timg")
                let before = Self.start(manager, url)
                #expect(await server.waitUntil { $0.requests.count >= 1 })
                // The loader's cancelled completion waits behind this block: the manager hears of it late.
                callbacks.async { Thread.sleep(forTimeInterval: 0.3) }
                if useURL { loader.cancelDownloads(for: url) } else { loader.cancelAllDownloads() }
                let after = Self.start(manager, url)
                #expect((await Self.finished(before.final))?.error?.code == .cancelled)
                let result = await Self.finished(after.final)
                #expect(
                    result?.value?.image.width == 4,
                    "a new transfer, not the cancelled one's job: \(String(describing: result))")
                server.open("first")
                _ = await server.waitUntil { _ in loader.activeTransferCount == (0, 0) }
            }
        }
    }

    @Test("cancelAllDownloads() ends the downloads waiting for admission too: none of them is ever sent")
    func cancelAllStartsNothingThatWaited() async throws {
        try await withServer(script: { _ in .hold("never", then: Self.response) }) { server, loader in
            let manager = Self.manager(loader, downloadsAhead: 2)
            let loads = (0..<5).map { Self.start(manager, server.url("/w\($0).timg")) }
            #expect(await server.waitUntil { $0.requests.count == 2 })
            #expect(loader.cancelAllDownloads() == 5, "two transfers and three waiting downloads")
            for load in loads { #expect((await Self.finished(load.final))?.error?.code == .cancelled) }
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(server.stats.value.requests.count == 2, "nothing that waited for admission was sent")
            #expect(!manager.isRunning)
        }
    }

    @Test("cancelDownloads(for:) matches the URL the caller gave, also when a request modifier rewrote it")
    func cancelByURLMatchesTheCallersURL() async throws {
        try await withServer(script: { _ in .hold("go", then: Self.response) }) { server, loader in
            let manager = Self.manager(loader)
            let asked = server.url("/asked.timg")
            var context = ImageContext()
            let rewritten = server.url("/rewritten.timg")
            context.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request.url = rewritten
                return request
            }
            let load = Self.start(manager, asked, context: context)
            let direct = startLoad(loader, asked, context: context)
            #expect(await server.waitUntil { $0.requests.count >= 1 })
            #expect(loader.cancelDownloads(for: asked) >= 1)
            #expect((await Self.finished(load.final))?.error?.code == .cancelled)
            #expect(await direct.recorder.result(within: 5)?.error?.code == .cancelled)
            server.open("go")
        }
    }

    @Test("a priority changed while the load waits for admission reaches the loader's queue")
    func priorityChangedWhileWaitingReachesTheLoader() async throws {
        try await withServer(
            loader: { $0.maxConcurrentDownloads = 1 },
            script: { request in
                switch request.path {
                case "/a.timg": .hold("a", then: Self.response)
                case "/b.timg": .hold("b", then: Self.response)
                default: Self.response
                }
            }
        ) { server, loader in
            let manager = Self.manager(loader, downloadsAhead: 3)
            let a = Self.start(manager, server.url("/a.timg"))
            #expect(await server.waitUntil { $0.requests.count == 1 })
            let b = Self.start(manager, server.url("/b.timg"), options: .lowPriority)
            let c = Self.start(manager, server.url("/c.timg"), options: .lowPriority)
            let d = Self.start(manager, server.url("/d.timg"), options: .lowPriority)  // waits: A, B, C are ahead
            d.operation.priority = .normal
            server.open("a")  // A ends; B takes the slot (held); A's decode frees a place and D is admitted
            #expect(await server.waitUntil { $0.requests.count == 2 })
            try await Task.sleep(nanoseconds: 300_000_000)
            server.open("b")
            for load in [a, b, c, d] { #expect((await Self.finished(load.final))?.value != nil) }
            #expect(
                server.stats.value.requests.map(\.path) == ["/a.timg", "/b.timg", "/d.timg", "/c.timg"],
                "D was raised to normal while it waited: ahead of C, low, in the loader's queue")
        }
    }
}
