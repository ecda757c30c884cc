import AsyncHTTPClient
import Dispatch
import Foundation
import ImageCore
import NIOCore
import NIOHTTP1
import Synchronization

/// One HTTP transfer shared by coalesced callers: the thin locked shell around ``TransferStateMachine``.
///
/// The shell owns the bytes, the callers' callbacks and the AsyncHTTPClient task; the state machine decides.
/// Every event is applied under `inner`'s lock and the resulting actions (callbacks, task cancellation, slot
/// release) run after it is released. Callbacks for one transfer run in order on its own serial queue — never on
/// a NIO event loop, never on the Swift cooperative pool — so a caller always sees its progress before its
/// completion, and exactly one completion.
final class Transfer: Sendable {
    struct Caller: Sendable {
        let progress: (@Sendable (LoadProgress) -> Void)?
        let completion: @Sendable (Result<LoadedImageData, ImageError>) -> Void
        let responseModifier: (any ResponseModifier)?
        let decryptor: (any DownloadDecryptor)?
    }

    private struct Inner: Sendable {
        var machine: TransferStateMachine
        var callers: [UInt64: Caller] = [:]
        var body = Data()
        var response: ResponseMetadata?
        var visitedURL: URL?
        var task: HTTPClient.Task<Void>?
        var attempt = 0
        var startedAt: ContinuousClock.Instant?
        var slotReleased = false
    }

    let id: UInt64
    let request: TransferRequest
    let loader: HTTPLoader
    private let callbackQueue: DispatchQueue
    private let inner: Mutex<Inner>

    init(id: UInt64, request: TransferRequest, loader: HTTPLoader) {
        self.id = id
        self.request = request
        self.loader = loader
        callbackQueue = DispatchQueue(label: "webimage.httploader.transfer", target: HTTPLoader.callbackTarget)
        let configuration = loader.configuration
        inner = Mutex(
            Inner(
                machine: TransferStateMachine(
                    progressByteInterval: configuration.progressByteInterval,
                    progressTimeInterval: UInt64(max(0, configuration.progressTimeInterval) * 1e9))))
    }

    var url: URL { request.request.url }

    // MARK: Callers

    /// Adds a caller; called under the loader's lock, so it only touches this transfer's state.
    /// Returns the join action, the bytes to replay to a progressive joiner and the number of callers now.
    func join(_ subscriber: UInt64, caller: Caller, progressive: Bool) -> (
        TransferStateMachine.JoinAction, Data?, Int
    ) {
        inner.withLock { inner in
            let action = inner.machine.join(subscriber, progressive: progressive)
            guard case .joined(let replay) = action else { return (action, nil, 0) }
            inner.callers[subscriber] = caller
            let partial = replay != nil && progressive ? inner.body : nil
            return (action, partial, inner.machine.subscribers.count)
        }
    }

    /// Replays the bytes received so far to a caller that joined late.
    func deliverReplay(_ report: TransferStateMachine.ProgressReport, partialData: Data?, to subscriber: UInt64) {
        guard let progress = inner.withLock({ $0.callers[subscriber]?.progress }) else { return }
        callbackQueue.async {
            progress(
                LoadProgress(receivedBytes: report.received, expectedBytes: report.expected, partialData: partialData))
        }
    }

    /// A caller cancelled: complete it alone with `cancelled`; if it was the last, cancel the transfer.
    func leave(_ subscriber: UInt64) {
        let (action, caller, task) = inner.withLock { inner in
            (inner.machine.leave(subscriber), inner.callers.removeValue(forKey: subscriber), inner.task)
        }
        switch action {
        case .none:
            return
        case .completeSubscriber:
            break
        case .completeSubscriberAndCancelTransfer(let wasQueued):
            loader.transferAbandoned(self, wasQueued: wasQueued)
            // The running task fails with `cancelled`; its completion releases the slot once the connection is gone.
            task?.cancel()
        }
        if let caller {
            callbackQueue.async { caller.completion(.failure(.cancelled(stage: .download))) }
        }
    }

    // MARK: Running

    /// The loader's queue granted a slot: send the request, or give the slot back if everyone left meanwhile.
    func start() {
        let action = inner.withLock { inner -> TransferStateMachine.StartAction in
            let action = inner.machine.slotGranted()
            if action == .execute {
                inner.attempt = 1
                inner.startedAt = .now
            }
            return action
        }
        switch action {
        case .execute: execute(attempt: 1)
        case .releaseSlot: releaseSlot()
        }
    }

    private func execute(attempt: Int) {
        loader.metrics.requests.increment()
        loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .started(attempt: attempt)))
        loader.logger.debug(
            "HTTP transfer started",
            metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "attempt": "\(attempt)"])
        let client: HTTPClient
        let httpRequest: HTTPClient.Request
        do {
            client = try loader.client(insecure: request.insecure)
            var headers = HTTPHeaders()
            for (name, value) in request.request.headers { headers.add(name: name, value: value) }
            httpRequest = try HTTPClient.Request(
                url: url, method: HTTPMethod(rawValue: request.request.method), headers: headers)
        } catch {
            finish(.failure(HTTPErrorMapping.imageError(from: error)))
            return
        }
        let deadline = request.request.timeout.map { NIODeadline.now() + .nanoseconds(Int64($0 * 1e9)) }
        let task = client.execute(
            request: httpRequest, delegate: TransferDelegate(transfer: self), eventLoop: .indifferent,
            deadline: deadline, logger: loader.logger)
        let abandoned = inner.withLock { inner -> Bool in
            inner.task = task
            return inner.machine.isFinished
        }
        if abandoned { task.cancel() }
        task.futureResult.whenComplete { result in self.attemptEnded(result, attempt: attempt) }
    }

    // MARK: Delegate events (on the task's event loop)

    func visited(_ request: HTTPClient.Request, head: HTTPResponseHead) {
        if self.request.handleCookies {
            loader.cookieJar.store(setCookieHeaders: head.headers["set-cookie"], from: request.url)
        }
        inner.withLock { $0.visitedURL = request.url }
    }

    /// Vets the final head; a returned error aborts the transfer (and closes the connection).
    func receivedHead(_ head: HTTPResponseHead) -> ImageError? {
        let finalURL = inner.withLock { $0.visitedURL } ?? url
        var response = HTTPResponseParsing.metadata(head: head, url: finalURL)
        let configuration = loader.configuration
        let status = Int(head.status.code)
        loader.events.yield(
            HTTPLoaderEvent(
                transferID: id, url: url,
                kind: .response(statusCode: status, expectedBytes: response.expectedContentLength)))
        if status != 304 {
            guard configuration.acceptableStatusCodes.contains(status) else {
                return .invalidDownloadStatusCode(status)
            }
            guard
                HTTPResponseParsing.isAcceptable(
                    contentType: response.contentType, allowed: loader.acceptableContentTypes)
            else {
                return ImageError(
                    .invalidDownloadContentType, stage: .download,
                    message: "content type \(response.contentType ?? "none") is not acceptable", statusCode: status)
            }
            if let length = response.expectedContentLength, length > configuration.maximumResponseSize {
                return Self.tooLarge("Content-Length \(length)", limit: configuration.maximumResponseSize)
            }
        }
        if let modifier = configuration.responseModifier {
            // User code: called without holding any lock.
            guard let modified = modifier.modifiedResponse(for: response) else {
                return ImageError(
                    .invalidDownloadResponse, stage: .download, message: "the response modifier refused it")
            }
            response = modified
        }
        inner.withLock { inner in
            inner.response = response
            inner.machine.headReceived(expected: response.expectedContentLength)
            if let length = response.expectedContentLength, inner.body.isEmpty {
                inner.body.reserveCapacity(min(length, configuration.maximumResponseSize))
            }
        }
        return nil
    }

    private typealias PendingReport = (
        report: TransferStateMachine.ProgressReport, partial: Data?, callers: [UInt64: Caller]
    )

    /// Appends a body part; a returned error aborts the transfer.
    func receivedBody(_ buffer: ByteBuffer, eventLoop: any EventLoop) -> ImageError? {
        let limit = loader.configuration.maximumResponseSize
        let now = DispatchTime.now().uptimeNanoseconds
        let outcome = inner.withLock { inner -> Result<TransferStateMachine.BodyAction, ImageError> in
            guard inner.body.count + buffer.readableBytes <= limit else {
                return .failure(Self.tooLarge("more than \(limit) bytes streamed", limit: limit))
            }
            buffer.withUnsafeReadableBytes { inner.body.append(contentsOf: $0) }
            return .success(inner.machine.bodyReceived(buffer.readableBytes, now: now))
        }
        loader.metrics.bytes.increment(by: Int64(buffer.readableBytes))
        switch outcome {
        case .failure(let error):
            return error
        case .success(.none):
            break
        case .success(.report(let report)):
            deliver(pending(report))
        case .success(.scheduleFlush(let delay)):
            eventLoop.scheduleTask(in: .nanoseconds(Int64(delay))) { self.flushProgress() }
        }
        return nil
    }

    private func flushProgress() {
        let now = DispatchTime.now().uptimeNanoseconds
        if let report = inner.withLock({ $0.machine.flush(now: now) }) { deliver(pending(report)) }
    }

    /// The report plus what delivering it needs: the bytes for progressive callers and their callbacks.
    private func pending(_ report: TransferStateMachine.ProgressReport) -> PendingReport {
        inner.withLock { inner in
            let partial = report.subscribers.contains { $0.progressive } ? inner.body.prefix(report.received) : nil
            return (report, partial, inner.callers)
        }
    }

    private func deliver(_ pending: PendingReport) {
        let (report, partialData, callers) = pending
        let targets = report.subscribers.compactMap { subscriber in
            callers[subscriber.id]?.progress.map { ($0, subscriber.progressive) }
        }
        guard !targets.isEmpty else { return }
        callbackQueue.async {
            for (progress, progressive) in targets {
                progress(
                    LoadProgress(
                        receivedBytes: report.received, expectedBytes: report.expected,
                        partialData: progressive ? partialData : nil))
            }
        }
    }

    private static func tooLarge(_ detail: String, limit: Int) -> ImageError {
        ImageError(.downloadTooLarge, stage: .download, message: "\(detail) (limit \(limit))")
    }

    // MARK: Ending

    private func attemptEnded(_ result: Result<Void, any Error>, attempt: Int) {
        switch result {
        case .success:
            let (response, body) = inner.withLock { ($0.response, $0.body) }
            guard let response else {
                finish(.failure(ImageError(.invalidDownloadResponse, stage: .download, message: "no response head")))
                return
            }
            if response.statusCode == 304 {
                finish(
                    .failure(
                        ImageError(
                            .cacheNotModified, stage: .download, message: "304 Not Modified", statusCode: 304)))
            } else if let expected = response.expectedContentLength, expected != body.count {
                // AsyncHTTPClient reports short bodies itself; this guards against a silent truncation anyway.
                finish(
                    .failure(
                        ImageError(
                            .downloadFailed, stage: .download,
                            message: "received \(body.count) of \(expected) bytes")))
            } else {
                finish(.success(LoadedImageData(data: body, response: response)))
            }
        case .failure(let error):
            let mapped = HTTPErrorMapping.imageError(from: error)
            if let delay = retryDelay(after: mapped, attempt: attempt) {
                scheduleRetry(attempt: attempt + 1, delay: delay, error: mapped)
            } else {
                finish(.failure(mapped))
            }
        }
    }

    private func retryDelay(after error: ImageError, attempt: Int) -> Double? {
        guard let policy = loader.configuration.retry, attempt < policy.maxAttempts else { return nil }
        let retryable =
            (error.code == .invalidDownloadStatusCode && (error.statusCode ?? 0) >= 500)
            || HTTPErrorMapping.isRetryableTransportError(error)
        guard retryable else { return nil }
        let eligible = inner.withLock { !$0.machine.isFinished && $0.body.isEmpty }
        return eligible ? policy.delay(beforeRetry: attempt) : nil
    }

    private func scheduleRetry(attempt: Int, delay: Double, error: ImageError) {
        loader.events.yield(
            HTTPLoaderEvent(transferID: id, url: url, kind: .retrying(attempt: attempt, delay: delay, error: error)))
        loader.logger.debug(
            "HTTP transfer retrying",
            metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error.code)"])
        let group = HTTPClient.defaultEventLoopGroup
        group.next().scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
            let proceed = self.inner.withLock { inner -> Bool in
                guard !inner.machine.isFinished else { return false }
                inner.machine.restart()
                inner.attempt = attempt
                inner.response = nil
                inner.visitedURL = nil
                inner.task = nil
                return true
            }
            if proceed { self.execute(attempt: attempt) } else { self.finish(.failure(.cancelled(stage: .download))) }
        }
    }

    /// Completes every remaining caller with `result`, reports the outcome and releases the slot.
    private func finish(_ result: Result<LoadedImageData, ImageError>) {
        let (ended, callers, startedAt) = inner.withLock { inner in
            let ended = inner.machine.finish(succeeded: (try? result.get()) != nil)
            let callers = ended.complete.compactMap { subscriber in
                inner.callers.removeValue(forKey: subscriber.id).map {
                    (caller: $0, progressive: subscriber.progressive)
                }
            }
            return (ended, callers, inner.startedAt)
        }
        let duration = startedAt.map { ContinuousClock.now - $0 } ?? .zero
        report(result, duration: duration, abandoned: ended.complete.isEmpty)
        releaseSlot()
        guard !callers.isEmpty else { return }
        callbackQueue.async {
            if let finalReport = ended.finalReport, case .success(let loaded) = result {
                for (caller, progressive) in callers {
                    caller.progress?(
                        LoadProgress(
                            receivedBytes: finalReport.received, expectedBytes: finalReport.expected,
                            partialData: progressive ? loaded.data : nil))
                }
            }
            for (caller, _) in callers { caller.completion(Self.personalize(result, for: caller)) }
        }
    }

    /// Gives the slot back to the loader's queue, once.
    private func releaseSlot() {
        let first = inner.withLock { inner -> Bool in
            defer { inner.slotReleased = true }
            return !inner.slotReleased
        }
        if first { loader.transferEnded(self) }
    }

    /// Shutdown: fails every caller with `cancelled` and cancels the task.
    func abort() {
        let (callers, task) = inner.withLock { inner in
            let ended = inner.machine.finish(succeeded: false)
            let callers = ended.complete.compactMap { inner.callers.removeValue(forKey: $0.id) }
            return (callers, inner.task)
        }
        task?.cancel()
        guard !callers.isEmpty else { return }
        callbackQueue.async {
            for caller in callers { caller.completion(.failure(.cancelled(stage: .download))) }
        }
    }
}
