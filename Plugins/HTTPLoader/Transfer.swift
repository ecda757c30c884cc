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
/// release) run after it is released. Callbacks never run on a NIO event loop or the Swift cooperative pool: a
/// transfer with a progress listener has its own serial queue, so a caller always sees its progress before its
/// completion; callers without progress are completed on the loader's shared queue. Exactly one completion each.
///
/// A transfer is a series of hops (the request, then each redirect the loader follows itself, see
/// ``RedirectPolicy``) and, with a retry policy, of attempts; ``TransferPace`` bounds the whole of it in time.
final class Transfer: Sendable {
    struct Caller: Sendable {
        let progress: (@Sendable (LoadProgress) -> Void)?
        let completion: @Sendable (Result<LoadedImageData, ImageError>) -> Void
        let responseModifier: (any ResponseModifier)?
        let decryptor: (any DownloadDecryptor)?
        /// The caller's own judge of the first bytes (the manager's pixel budget, for example).
        let headerCheck: DownloadHeaderCheck?
    }

    struct Inner: Sendable {
        var machine: TransferStateMachine
        var callers: [UInt64: Caller] = [:]
        var body = Data()
        /// The final response after the configuration's response modifier.
        var response: ResponseMetadata?
        /// Responses of callers with their own response modifier, decided when the head arrived.
        var personalResponses: [UInt64: ResponseMetadata] = [:]
        /// Header checks that have not answered yet, by subscriber.
        var pendingChecks: [UInt64: DownloadHeaderCheck] = [:]
        /// What the current hop sends.
        var hop: ImageRequest
        /// Every URL requested in this attempt (cycle detection); filled at the first redirect.
        var visited: Set<String> = []
        /// The serial queue of this transfer's callbacks, made when the first caller with a progress callback
        /// joins (its progress must precede its completion); callers without one are completed on the shared
        /// concurrent queue, which saves a queue per transfer.
        var callbackQueue: DispatchQueue?
        var redirects = 0
        /// Set while the body of a redirect response is drained; the hop to send once it ended.
        var nextHop: ImageRequest?
        var redirectBodyBytes = 0
        var task: HTTPClient.Task<Void>?
        var attempt = 0
        var startedAt: ContinuousClock.Instant?
        var pace: TransferPace?
        /// Bytes received in all hops and attempts (the pace counts them).
        var wireBytes = 0
        /// Set by the watchdog: the transfer must end with this error.
        var abortError: ImageError?
        var slotReleased = false
    }

    /// The body of a redirect response is read and dropped (so the connection stays reusable) up to this size.
    static let maximumRedirectBody = 256 * 1024

    let id: UInt64
    let request: TransferRequest
    let loader: HTTPLoader
    let inner: Mutex<Inner>

    init(id: UInt64, request: TransferRequest, loader: HTTPLoader) {
        self.id = id
        self.request = request
        self.loader = loader
        let configuration = loader.configuration
        inner = Mutex(
            Inner(
                machine: TransferStateMachine(
                    progressByteInterval: configuration.progressByteInterval,
                    progressTimeInterval: UInt64(max(0, configuration.progressTimeInterval) * 1e9)),
                hop: request.request))
    }

    var url: URL { request.request.url }

    /// Where `inner`'s callbacks go: its serial queue, or the shared one when no caller listens to progress.
    static func queue(_ inner: Inner) -> DispatchQueue { inner.callbackQueue ?? HTTPLoader.callbackTarget }

    // MARK: Callers

    /// Adds a caller; called under the loader's lock, so it only touches this transfer's state.
    /// Returns the join action, the bytes to replay to a progressive joiner and the number of callers now.
    func join(_ subscriber: UInt64, caller: Caller, progressive: Bool) -> (
        TransferStateMachine.JoinAction, Data?, Int
    ) {
        inner.withLock { inner in
            let action = inner.machine.join(subscriber, progressive: progressive, wantsProgress: caller.progress != nil)
            guard case .joined(let replay) = action else { return (action, nil, 0) }
            inner.callers[subscriber] = caller
            if caller.progress != nil && inner.callbackQueue == nil {
                inner.callbackQueue = DispatchQueue(
                    label: "webimage.httploader.transfer", target: HTTPLoader.callbackTarget)
            }
            if let check = caller.headerCheck { inner.pendingChecks[subscriber] = check }
            let partial = replay != nil && progressive ? inner.body : nil
            return (action, partial, inner.machine.subscribers.count)
        }
    }

    /// Replays the bytes received so far to a caller that joined late.
    func deliverReplay(_ report: TransferStateMachine.ProgressReport, partialData: Data?, to subscriber: UInt64) {
        let (progress, queue) = inner.withLock { ($0.callers[subscriber]?.progress, Self.queue($0)) }
        guard let progress else { return }
        queue.async {
            progress(
                LoadProgress(receivedBytes: report.received, expectedBytes: report.expected, partialData: partialData))
        }
    }

    /// A caller cancelled: complete it alone with `cancelled`; if it was the last, cancel the transfer.
    func leave(_ subscriber: UInt64) {
        drop([subscriber: .cancelled(stage: .download)], abortWith: nil)
    }

    /// Completes `failures`' subscribers alone with their errors. When nobody is left the transfer is abandoned:
    /// with `abortWith` nil the task is cancelled (a caller cancelled); otherwise the caller of this method aborts
    /// the task with that error itself (a delegate callback returning it). Returns true when nobody is left.
    @discardableResult
    func drop(_ failures: [UInt64: ImageError], abortWith error: ImageError?) -> Bool {
        var dropped: [(Caller, ImageError)] = []
        var abandoned: (wasQueued: Bool, task: HTTPClient.Task<Void>?)?
        let queue = inner.withLock { inner in
            for (subscriber, failure) in failures {
                let action = inner.machine.leave(subscriber)
                guard action != .none else { continue }
                inner.pendingChecks[subscriber] = nil
                inner.personalResponses[subscriber] = nil
                if let caller = inner.callers.removeValue(forKey: subscriber) { dropped.append((caller, failure)) }
                if case .completeSubscriberAndCancelTransfer(let wasQueued) = action {
                    abandoned = (wasQueued, inner.task)
                }
            }
            return Self.queue(inner)
        }
        if let abandoned {
            loader.transferAbandoned(self, wasQueued: abandoned.wasQueued, cancelled: error == nil)
            // The running task fails with `cancelled`; its completion releases the slot once the connection is gone.
            if error == nil { abandoned.task?.cancel() }
        }
        if !dropped.isEmpty {
            queue.async { [dropped] in
                for (caller, failure) in dropped { caller.completion(.failure(failure)) }
            }
        }
        return abandoned != nil
    }

    // MARK: Running

    /// The loader's queue granted a slot: send the request, or give the slot back if everyone left meanwhile.
    func start() {
        let now = NIODeadline.now().uptimeNanoseconds
        let rate = loader.configuration.minimumTransferRate
        let (action, interval) = inner.withLock { inner -> (TransferStateMachine.StartAction, UInt64?) in
            let action = inner.machine.slotGranted()
            guard action == .execute else { return (action, nil) }
            inner.attempt = 1
            inner.startedAt = .now
            let pace = TransferPace(startedAt: now, timeout: request.timeout, rate: rate)
            inner.pace = pace
            return (action, pace.isWatched ? pace.checkInterval : nil)
        }
        switch action {
        case .execute:
            if let interval { loader.watch(within: interval) }
            execute(attempt: 1)
        case .releaseSlot:
            releaseSlot()
        }
    }

    /// Sends the current hop of `attempt`.
    private func execute(attempt: Int) {
        let (hop, redirects, pendingAbort) = inner.withLock { ($0.hop, $0.redirects, $0.abortError) }
        if let pendingAbort { return finish(.failure(pendingAbort)) }
        if redirects == 0 {
            loader.metrics.requests.increment()
            loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .started(attempt: attempt)))
            loader.logger.debug(
                "HTTP transfer started",
                metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "attempt": "\(attempt)"])
        }
        let client: HTTPClient
        let httpRequest: HTTPClient.Request
        do {
            client = try loader.client(insecure: request.insecure)
            var headers = HTTPHeaders()
            headers.reserveCapacity(hop.headers.count)
            for (name, value) in hop.headers { headers.add(name: name, value: value) }
            httpRequest = try HTTPClient.Request(
                url: hop.url, method: HTTPMethod(rawValue: hop.method), headers: headers)
        } catch {
            finish(.failure(HTTPErrorMapping.imageError(from: error)))
            return
        }
        // AsyncHTTPClient logs only at debug and trace, yet attaches request metadata to any logger it is given:
        // with a less verbose logger it gets none (its own disabled one), which saves that work per request.
        let task = client.execute(
            request: httpRequest, delegate: TransferDelegate(transfer: self), eventLoop: .indifferent,
            logger: loader.logger.logLevel <= .debug ? loader.logger : nil)
        let (abandoned, abortError) = inner.withLock { inner -> (Bool, ImageError?) in
            inner.task = task
            return (inner.machine.isFinished, inner.abortError)
        }
        if abandoned {
            task.cancel()
        } else if let abortError {
            task.fail(reason: abortError)
        }
        task.futureResult.whenComplete { result in self.hopEnded(result, attempt: attempt) }
    }

    /// The watchdog's tick: ends the transfer when its deadline passed or it is too slow. Returns when to be
    /// checked next (nanoseconds), or nil when the transfer no longer needs watching.
    func enforcePace(now: UInt64) -> UInt64? {
        let (verdict, task, interval) = inner.withLock {
            inner -> (TransferPace.Verdict, HTTPClient.Task<Void>?, UInt64?) in
            guard !inner.machine.isFinished, inner.abortError == nil, var pace = inner.pace else {
                return (.ok, nil, nil)
            }
            let verdict = pace.check(now: now, totalBytes: inner.wireBytes)
            inner.pace = pace
            guard verdict == .ok else {
                inner.abortError = Self.paceError(verdict)
                return (verdict, inner.task, nil)
            }
            return (.ok, nil, pace.checkInterval)
        }
        guard verdict != .ok else { return interval }
        let error = Self.paceError(verdict)
        loader.logger.debug(
            "HTTP transfer too slow",
            metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error)"])
        if let task {
            task.fail(reason: error)
        } else {
            // Between hops or waiting for a retry: no task to fail, end here (a later hop start sees it finished).
            finish(.failure(error))
        }
        return nil
    }

    private static func paceError(_ verdict: TransferPace.Verdict) -> ImageError {
        switch verdict {
        case .ok:
            return ImageError(.timedOut, stage: .download)
        case .deadlineExceeded(let seconds):
            return ImageError(.timedOut, stage: .download, message: "the transfer took longer than \(seconds) s")
        case .tooSlow(let bytes, let seconds):
            return ImageError(
                .timedOut, stage: .download,
                message: "too slow: \(bytes) bytes in the last \((seconds * 1000).rounded() / 1000) s")
        }
    }

    // MARK: Ending

    private func hopEnded(_ result: Result<Void, any Error>, attempt: Int) {
        switch result {
        case .success:
            let (next, response, body) = inner.withLock { inner -> (ImageRequest?, ResponseMetadata?, Data) in
                guard let next = inner.nextHop else { return (nil, inner.response, inner.body) }
                inner.nextHop = nil
                inner.redirectBodyBytes = 0
                inner.redirects += 1
                if inner.visited.isEmpty { inner.visited.insert(self.request.key.url) }
                inner.visited.insert(next.url.absoluteString)
                inner.hop = next
                inner.response = nil
                inner.task = nil
                return (next, nil, Data())
            }
            if next != nil { return execute(attempt: attempt) }
            guard let response else {
                finish(.failure(ImageError(.invalidDownloadResponse, stage: .download, message: "no response head")))
                return
            }
            if response.statusCode == 304 {
                finish(
                    .failure(
                        ImageError(.cacheNotModified, stage: .download, message: "304 Not Modified", statusCode: 304)))
            } else if let expected = response.expectedContentLength, expected != body.count {
                // AsyncHTTPClient reports short bodies itself; this guards against a silent truncation anyway.
                finish(
                    .failure(
                        ImageError(
                            .downloadFailed, stage: .download, message: "received \(body.count) of \(expected) bytes")))
            } else {
                finish(.success(LoadedImageData(data: body, response: response)))
            }
        case .failure(let error):
            let mapped = inner.withLock { $0.abortError } ?? HTTPErrorMapping.imageError(from: error)
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
        let eligible = inner.withLock { !$0.machine.isFinished && $0.body.isEmpty && $0.abortError == nil }
        return eligible ? policy.delay(beforeRetry: attempt) : nil
    }

    private func scheduleRetry(attempt: Int, delay: Double, error: ImageError) {
        loader.events.yield(
            HTTPLoaderEvent(transferID: id, url: url, kind: .retrying(attempt: attempt, delay: delay, error: error)))
        loader.logger.debug(
            "HTTP transfer retrying",
            metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error.code)"])
        loader.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
            let proceed = self.inner.withLock { inner -> Bool in
                guard !inner.machine.isFinished, inner.abortError == nil else { return false }
                inner.machine.restart()
                inner.attempt = attempt
                inner.response = nil
                inner.personalResponses = [:]
                inner.hop = self.request.request
                inner.visited = []
                inner.redirects = 0
                inner.nextHop = nil
                inner.task = nil
                return true
            }
            if proceed {
                self.execute(attempt: attempt)
            } else {
                self.finish(.failure(self.inner.withLock { $0.abortError } ?? .cancelled(stage: .download)))
            }
        }
    }

    /// Completes every remaining caller with `result`, reports the outcome and releases the slot.
    func finish(_ result: Result<LoadedImageData, ImageError>) {
        let (ended, callers, startedAt, checks, bytes, queue) = inner.withLock { inner in
            let ended = inner.machine.finish(succeeded: (try? result.get()) != nil)
            let callers = ended.complete.compactMap { subscriber in
                inner.callers.removeValue(forKey: subscriber.id).map {
                    (
                        id: subscriber.id, caller: $0, progressive: subscriber.progressive,
                        personal: inner.personalResponses[subscriber.id]
                    )
                }
            }
            let checks = inner.pendingChecks
            inner.pendingChecks = [:]
            inner.personalResponses = [:]
            return (ended, callers, inner.startedAt, checks, inner.wireBytes, Self.queue(inner))
        }
        let duration = startedAt.map { ContinuousClock.now - $0 } ?? .zero
        report(result, duration: duration, bytes: bytes, abandoned: ended.complete.isEmpty)
        releaseSlot()
        guard !callers.isEmpty else { return }
        queue.async {
            if let finalReport = ended.finalReport, case .success(let loaded) = result {
                for (_, caller, progressive, _) in callers {
                    caller.progress?(
                        LoadProgress(
                            receivedBytes: finalReport.received, expectedBytes: finalReport.expected,
                            partialData: progressive ? loaded.data : nil))
                }
            }
            for (id, caller, _, personal) in callers {
                caller.completion(
                    Self.personalize(
                        result, for: caller, personalResponse: personal, headerCheck: checks[id],
                        acceptable: self.loader.responseValidator))
            }
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
        let (callers, task, queue) = inner.withLock { inner in
            let ended = inner.machine.finish(succeeded: false)
            let callers = ended.complete.compactMap { inner.callers.removeValue(forKey: $0.id) }
            return (callers, inner.task, Self.queue(inner))
        }
        task?.cancel()
        guard !callers.isEmpty else { return }
        queue.async {
            for caller in callers { caller.completion(.failure(.cancelled(stage: .download))) }
        }
    }
}
