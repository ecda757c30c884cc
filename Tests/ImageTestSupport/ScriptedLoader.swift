import Dispatch
import Foundation
import ImageCore

/// A loader double for manager tests: answers from a script per URL, records every request, and can hold
/// requests until the test releases them. Handles the `test` scheme (or every scheme with `acceptsAll`).
public final class ScriptedLoader: ImageLoader, Sendable {
    /// What the loader answers for a URL.
    public enum Reply: Sendable {
        /// Succeed with bytes and response metadata.
        case data(Data, ResponseMetadata)
        /// Fail.
        case failure(ImageError)
        /// Report progress chunks (cumulative prefixes of the data), then succeed.
        case progressive(Data, chunks: Int)
        /// Fail after reporting some progress.
        case failAfterProgress(ImageError, receivedBytes: Int)
    }

    /// One request as the loader saw it.
    public struct Request: Sendable {
        /// The URL.
        public let url: URL
        /// The options.
        public let options: ImageOptions
        /// The context (carries the cached image and validators for revalidation).
        public let context: ImageContext
        /// The request's handle.
        public let operation: CancellableOperation
    }

    private struct State: Sendable {
        var script: [String: Reply] = [:]
        var defaultReply: Reply?
        var requests: [Request] = []
        var held: [(Request, @Sendable () -> Void)] = []
        var holding = false
        var cancelledCount = 0
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ScriptedLoader", attributes: .concurrent)
    /// Seconds before answering.
    public let delay: TimeInterval
    /// Accept every URL, not only the `test` scheme.
    public let acceptsAll: Bool
    /// Blocks with the default policy unless overridden.
    public let blockDecision: (@Sendable (URL, ImageError) -> Bool)?
    /// Called at ``TestStage/download`` (request received) and ``TestStage/downloadAnswer``.
    public let hook = StageHook()
    /// What the loader reports as ``ImageLoader/transferKey(for:options:context:)`` (default "").
    public let transferKeyOf: (@Sendable (ImageContext) -> String)?

    /// Creates a loader.
    public init(
        delay: TimeInterval = 0, acceptsAll: Bool = false, blockDecision: (@Sendable (URL, ImageError) -> Bool)? = nil,
        transferKey: (@Sendable (ImageContext) -> String)? = nil
    ) {
        self.delay = delay
        self.acceptsAll = acceptsAll
        self.blockDecision = blockDecision
        self.transferKeyOf = transferKey
    }

    /// The scripted transfer key.
    public func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String {
        transferKeyOf?(context) ?? ""
    }

    /// Scripts the reply for `url`.
    public func set(_ reply: Reply, for url: URL) { state.withLock { $0.script[url.absoluteString] = reply } }

    /// Scripts the reply for URLs without their own script.
    public func setDefault(_ reply: Reply) { state.withLock { $0.defaultReply = reply } }

    /// Holds every new request until ``releaseAll()``.
    public func hold() { state.withLock { $0.holding = true } }

    /// Answers every held request and stops holding.
    public func releaseAll() {
        let held = state.withLock { state -> [@Sendable () -> Void] in
            state.holding = false
            defer { state.held.removeAll() }
            return state.held.map(\.1)
        }
        for answer in held { answer() }
    }

    /// Every request so far.
    public var requests: [Request] { state.withLock { $0.requests } }
    /// Number of requests so far.
    public var requestCount: Int { state.withLock { $0.requests.count } }
    /// Requests for `url` so far.
    public func requestCount(for url: URL) -> Int {
        state.withLock { $0.requests.filter { $0.url == url }.count }
    }
    /// Requests whose operation was cancelled.
    public var cancelledCount: Int {
        state.withLock { state in state.requests.filter { $0.operation.isCancelled }.count }
    }

    /// `test:` URLs (or all with `acceptsAll`).
    public func canRequestImage(for url: URL) -> Bool { acceptsAll || url.scheme == "test" }

    /// Answers per the script, on a background queue; a cancelled request answers `cancelled`.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        hook.fire(.download)
        let operation = CancellableOperation()
        let request = Request(url: url, options: options, context: context, operation: operation)
        // The completion is dropped once called: `requests` keeps every operation (and so its cancel handler) for
        // the test to inspect, and a handler still holding the manager's completion would keep the manager alive.
        let pending = Locked<(@Sendable (Result<LoadedImageData, ImageError>) -> Void)?>(completion)
        let complete: @Sendable (Result<LoadedImageData, ImageError>) -> Void = { result in
            let first = pending.withLock { pending in
                defer { pending = nil }
                return pending
            }
            first?(result)
        }
        // Not `self.queue`: `requests` keeps the operation, and its handler must not keep the loader.
        let queue = self.queue
        operation.onCancel { queue.async { complete(.failure(.cancelled(stage: .download))) } }
        let scripted = state.withLock { $0.script[url.absoluteString] ?? $0.defaultReply }
        // The manager's header check runs on the bytes as the request arrives, as a loader runs it on the first
        // bytes: a refusal is then the answer, delivered when the request is answered (held, or after the delay).
        let reply: Reply? = {
            guard case .data(let data, _)? = scripted, let check = context.downloadHeaderCheck,
                case .reject(let error) = check(data)
            else { return scripted }
            return .failure(error)
        }()
        let answer: @Sendable () -> Void = {
            self.queue.asyncAfter(deadline: .now() + self.delay) {
                self.hook.fire(.downloadAnswer)
                defer { self.hook.fire(.downloadDone) }
                guard !operation.isCancelled else { return }
                switch reply {
                case .data(let data, let response)?:
                    progress?(LoadProgress(receivedBytes: data.count, expectedBytes: data.count))
                    complete(.success(LoadedImageData(data: data, response: response)))
                case .failure(let error)?:
                    complete(.failure(error))
                case .progressive(let data, let chunks)?:
                    for index in 1...max(1, chunks) {
                        let prefix = data.prefix(data.count * index / max(1, chunks))
                        progress?(
                            LoadProgress(
                                receivedBytes: prefix.count, expectedBytes: data.count,
                                partialData: options.contains(.progressiveLoad) ? Data(prefix) : nil))
                    }
                    complete(.success(LoadedImageData(data: data, response: ResponseMetadata(url: url))))
                case .failAfterProgress(let error, let received)?:
                    progress?(LoadProgress(receivedBytes: received, expectedBytes: received * 2))
                    complete(.failure(error))
                case nil:
                    complete(.failure(.invalidDownloadStatusCode(404)))
                }
            }
        }
        let holdNow = state.withLock { state -> Bool in
            state.requests.append(request)
            if state.holding { state.held.append((request, answer)) }
            return state.holding
        }
        if !holdNow { answer() }
        return operation
    }

    /// The test's decision, else ImageCore's policy.
    public func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool {
        blockDecision?(url, error) ?? ImageLoaderPolicy.isPermanentFailure(error)
    }
}
