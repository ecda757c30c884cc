import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore

/// Collects one load's progress reports and completion(s), for tests.
final class LoadRecorder: Sendable {
    private struct State: Sendable {
        var progress: [LoadProgress] = []
        var results: [Result<LoadedImageData, ImageError>] = []
        var progressAfterCompletion = 0
    }

    private let state = Locked(State())

    var progress: [LoadProgress] { state.value.progress }
    var completionCount: Int { state.value.results.count }
    /// Progress reports that arrived after the completion (must stay 0).
    var progressAfterCompletion: Int { state.value.progressAfterCompletion }

    func recordProgress(_ progress: LoadProgress) {
        state.withLock { state in
            if !state.results.isEmpty { state.progressAfterCompletion += 1 }
            state.progress.append(progress)
        }
    }

    func recordCompletion(_ result: Result<LoadedImageData, ImageError>) {
        state.withLock { $0.results.append(result) }
    }

    /// Waits for the completion (polling, up to `seconds`); nil if none came.
    func result(within seconds: Double = 10) async -> Result<LoadedImageData, ImageError>? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let first = state.value.results.first { return first }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return state.value.results.first
    }

    /// Waits until `condition` holds on the progress list (polling, up to `seconds`).
    func waitForProgress(within seconds: Double = 5, _ condition: ([LoadProgress]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(progress) { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return condition(progress)
    }
}

/// Starts a load through the callback API and returns its operation and recorder.
func startLoad(
    _ loader: any ImageLoader, _ url: URL, options: ImageOptions = [], context: ImageContext = ImageContext()
) -> (operation: any ImageOperation, recorder: LoadRecorder) {
    let recorder = LoadRecorder()
    let operation = loader.requestImage(
        with: url, options: options, context: context,
        progress: { recorder.recordProgress($0) },
        completion: { recorder.recordCompletion($0) })
    return (operation, recorder)
}

/// Loads `url` and waits for the result (nil on a hang of more than `seconds`).
func load(
    _ loader: any ImageLoader, _ url: URL, options: ImageOptions = [], context: ImageContext = ImageContext(),
    within seconds: Double = 10
) async -> Result<LoadedImageData, ImageError>? {
    await startLoad(loader, url, options: options, context: context).recorder.result(within: seconds)
}

/// Reads `stream` until `isLast` accepts an event, the stream ends or `seconds` passed; returns what it read.
///
/// Never `for await` a loader's events waiting for one particular event: the stream ends only at `shutdown()`,
/// which `withServer` calls after the test body, and the event may never come (a load that times out on a starved
/// machine reports `failed`, not `finished`), so such a loop hangs the whole test run instead of failing one test.
func readEvents(
    _ stream: AsyncStream<HTTPLoaderEvent>, within seconds: Double = 10,
    until isLast: @escaping @Sendable (HTTPLoaderEvent) -> Bool
) async -> [HTTPLoaderEvent] {
    let seen = Locked([HTTPLoaderEvent]())
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            for await event in stream {
                seen.withLock { $0.append(event) }
                if isLast(event) { return }
            }
        }
        group.addTask { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
        await group.next()
        // Ends the other child: the sleep, or the read (an AsyncStream's iteration ends when its task is cancelled).
        group.cancelAll()
    }
    return seen.value
}

extension HTTPLoaderEvent.Kind {
    /// True for the kinds that end a transfer: exactly one of them is reported per transfer.
    var endsTransfer: Bool {
        switch self {
        case .finished, .failed, .cancelled: true
        case .started, .joined, .response, .retrying, .priorityChanged: false
        }
    }
}

extension Result where Failure == ImageError {
    /// The error, or nil for a success.
    var error: ImageError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The value, or nil for a failure.
    var value: Success? { try? get() }
}

/// PNG-looking bytes: the real signature and IHDR chunk start, then a deterministic payload.
func pngLikeBytes(count: Int, seed: UInt8 = 7) -> [UInt8] {
    let header: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]
    var bytes = header
    var value = seed
    while bytes.count < max(count, header.count) {
        value = value &* 31 &+ 17
        bytes.append(value)
    }
    return Array(bytes.prefix(max(count, header.count)))
}

/// A loader for tests with a short timeout, plus any changes `configure` makes.
func makeLoader(_ configure: (inout HTTPLoaderConfiguration) -> Void = { _ in }) -> HTTPLoader {
    var configuration = HTTPLoaderConfiguration()
    configuration.timeout = 5
    configure(&configuration)
    return HTTPLoader(configuration: configuration)
}

/// Runs `body` with a started server and a loader, then shuts both down.
func withServer(
    loader configure: (inout HTTPLoaderConfiguration) -> Void = { _ in },
    script: @escaping TestHTTPServer.Script,
    _ body: (TestHTTPServer, HTTPLoader) async throws -> Void
) async throws {
    let server = try await TestHTTPServer.start(script: script)
    let loader = makeLoader(configure)
    do {
        try await body(server, loader)
    } catch {
        try? await loader.shutdown()
        await server.stop()
        throw error
    }
    try await loader.shutdown()
    await server.stop()
}
