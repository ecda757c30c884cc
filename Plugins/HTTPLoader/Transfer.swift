import AsyncHTTPClient
import Dispatch
import Foundation
import ImageCore
import NIOCore
import NIOHTTP1
import Synchronization

/// One HTTP transfer shared by coalesced callers: the thin locked shell that performs what
/// ``TransferStateMachine`` decides.
///
/// The shell holds only what the machine can't: the callers' callbacks, the bytes, the AsyncHTTPClient task and
/// the queue of callbacks to run. Every event is applied to the machine under `inner`'s lock; the actions it
/// returns (sending a hop, failing or cancelling the task, timers, callbacks, giving the slot back) run after the
/// lock is released.
///
/// Callbacks: a transfer's progress reports and completions go through one queue (``Deliveries``) that one
/// thread at a time drains, outside the lock, so they never overlap and a caller's progress always precedes its
/// completion. The thread that produced them drains it when it is the transfer's event loop (the path of every
/// completed download: no thread hop until the manager's decode pool); callbacks that a caller's own thread
/// produces (a late joiner's replay, a cancellation) and every callback when the configuration names a
/// ``HTTPLoaderConfiguration/callbackQueue`` are drained asynchronously instead, so no callback runs inside
/// `requestImage` or `cancel()`.
final class Transfer: Sendable {
    /// One caller's callbacks and per-caller rules. A class, immutable: it moves from `requestImage` into the
    /// transfer and out into a delivery, and copying five closures and existentials was as many reference counts.
    final class Caller: Sendable {
        let progress: (@Sendable (LoadProgress) -> Void)?
        let completion: @Sendable (Result<LoadedImageData, ImageError>) -> Void
        let responseModifier: (any ResponseModifier)?
        let decryptor: (any DownloadDecryptor)?
        /// The caller's own judge of the first bytes (the manager's pixel budget, for example).
        let headerCheck: DownloadHeaderCheck?
        /// The URL the caller asked for (its absolute string), before a request modifier rewrote it: what
        /// ``HTTPLoader/cancelDownloads(for:)`` matches.
        let requestedURL: String

        init(
            progress: (@Sendable (LoadProgress) -> Void)?,
            completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void,
            responseModifier: (any ResponseModifier)?, decryptor: (any DownloadDecryptor)?,
            headerCheck: DownloadHeaderCheck?, requestedURL: String
        ) {
            self.requestedURL = requestedURL
            self.progress = progress
            self.completion = completion
            self.responseModifier = responseModifier
            self.decryptor = decryptor
            self.headerCheck = headerCheck
        }
    }

    /// A callback to run.
    enum Delivery: Sendable {
        case progress(@Sendable (LoadProgress) -> Void, LoadProgress)
        /// Personalized (the caller's response modifier, header check and decryptor) when it runs, outside locks.
        /// `codings` is the body's content coding, removed once (``ContentCoding``) before the first completion runs.
        case completion(
            Caller, Result<LoadedImageData, ImageError>, personal: ResponseMetadata?, headerCheck: DownloadHeaderCheck?,
            codings: [ContentCoding] = [])
    }

    /// Callbacks waiting behind the one thread that runs them.
    struct Deliveries: Sendable {
        var pending: [Delivery] = []
        var draining = false

        /// Queues `batch`; returns it when the caller must run it (nobody drains), nil when a drain runs already.
        mutating func claim(_ batch: [Delivery]) -> [Delivery]? {
            guard !batch.isEmpty else { return nil }
            if draining {
                pending.append(contentsOf: batch)
                return nil
            }
            draining = true
            return batch
        }
    }

    struct Inner: Sendable {
        var machine: TransferStateMachine
        var callers = TransferCallers()
        var body = Data()
        var task: HTTPClient.Task<Void>?
        var deliveries = Deliveries()
        /// The URL AsyncHTTPClient visited last, when it follows redirects itself (a client given by the user).
        var lastVisited: URL?
        /// The content coding of the final response's body: while it has one, nobody sees the bytes before they are
        /// decoded whole (no header check on a prefix, no partial data for progressive decoding).
        var codings: [ContentCoding] = []
    }

    /// What an ending needs done once the lock is released.
    struct Settlement: Sendable {
        let ending: TransferStateMachine.Ending
        let task: HTTPClient.Task<Void>?
        /// Deliveries this thread claimed.
        let batch: [Delivery]?
        /// True when the completions decode the body first: they run off the event loop.
        var decodesBody = false
    }

    let id: UInt64
    let request: TransferRequest
    let loader: HTTPLoader
    let inner: Mutex<Inner>
    /// The success with its content coding removed, made by the first completion that needs it.
    private let decoded = Mutex<Result<LoadedImageData, ImageError>?>(nil)

    init(id: UInt64, request: TransferRequest, loader: HTTPLoader) {
        self.id = id
        self.request = request
        self.loader = loader
        var rules = loader.transferRules
        rules.timeout = request.timeout
        inner = Mutex(Inner(machine: TransferStateMachine(request: request.request, rules: rules)))
    }

    var url: URL { request.request.url }

    // MARK: Callers

    /// Adds a caller; called under the loader's lock, so it only touches this transfer's state. Returns nil when
    /// the transfer ended (the loader then starts a new one), else the callers now and the deliveries the
    /// caller must drain (``drainLater(_:)``) once the loader's lock is released: a late joiner's replay.
    func join(_ subscriber: TransferStateMachine.Subscriber, caller: Caller) -> (callers: Int, drain: [Delivery]?)? {
        inner.withLock { inner in
            guard case .joined(let replay) = inner.machine.join(subscriber) else { return nil }
            inner.callers[subscriber.id] = caller
            var drain: [Delivery]?
            if let replay, let progress = caller.progress {
                // Queued under the lock, so nothing the transfer reports later can overtake it.
                let partial = subscriber.progressive ? inner.body.prefix(replay.received) : nil
                drain = inner.deliveries.claim([
                    .progress(
                        progress,
                        LoadProgress(
                            receivedBytes: replay.received, expectedBytes: replay.expected, partialData: partial))
                ])
            }
            return (inner.machine.subscribers.count, drain)
        }
    }

    /// True when a caller of this transfer asked for `url` (its absolute string, before any request modifier).
    func serves(requestedURL url: String) -> Bool {
        inner.withLock { inner in inner.callers.contains { $0.requestedURL == url } }
    }

    /// The transfer's priority in the loader's queue (the highest of its callers').
    var priority: DownloadPriority { inner.withLock { $0.machine.priority } }

    /// Caller `subscriber`'s priority changed; called under the loader's lock. True when the transfer's changed.
    func setPriority(_ priority: DownloadPriority, of subscriber: UInt64) -> Bool {
        inner.withLock { $0.machine.setPriority(subscriber, priority) }
    }

    /// A caller cancelled: complete it alone with `cancelled`; if it was the last, the transfer ends.
    func leave(_ subscriber: UInt64) {
        let outcome = inner.withLock { inner -> (Settlement?, [Delivery]?, Bool)? in
            let before = inner.machine.priority
            let action = inner.machine.leave(subscriber)
            guard let caller = inner.callers.removeValue(forKey: subscriber) else { return nil }
            var settlement: Settlement?
            if case .completeSubscriberAndEnd(let ending) = action { settlement = Self.settle(ending, &inner) }
            let batch = inner.deliveries.claim([
                .completion(caller, .failure(.cancelled(stage: .download)), personal: nil, headerCheck: nil)
            ])
            return (settlement, batch, inner.machine.priority != before)
        }
        guard let (settlement, batch, repriced) = outcome else { return }
        if let settlement { conclude(settlement, inline: false) }
        if let batch { drainLater(batch) }
        if repriced { loader.syncQueuePriority(self) }
    }

    /// The loader ends the transfer (shutdown, cancelling everything or one URL's downloads): every caller
    /// completes with `error`.
    func abort(_ error: ImageError) {
        let settlement = inner.withLock { inner in inner.machine.abort(error).map { Self.settle($0, &inner) } }
        if let settlement { conclude(settlement, inline: false) }
    }

    // MARK: Running

    /// The loader's queue granted a slot: send the request, or give the slot back if everyone left meanwhile.
    func start() {
        let now = NIODeadline.now().uptimeNanoseconds
        switch inner.withLock({ $0.machine.slotGranted(now: now) }) {
        case .send(let send, let watchEvery):
            if let watchEvery { loader.watch(within: watchEvery, now: now) }
            execute(send)
        case .releaseSlot:
            loader.transferDone(self, leavesQueue: false, releasesSlot: true)
        }
    }

    /// Sends one hop.
    private func execute(_ send: TransferStateMachine.Send) {
        if !send.isRedirect { loader.recordStart(of: self, attempt: send.attempt) }
        let client: HTTPClient
        let httpRequest: HTTPClient.Request
        do {
            client = try loader.client(insecure: request.insecure)
            let hop = send.request
            // A first hop (or its retry) sends the request's own headers: their wire form may be made already.
            let headers =
                send.isRedirect
                ? TransferRequest.wireHeaders(hop.headers)
                : request.wireHeaders ?? TransferRequest.wireHeaders(hop.headers)
            httpRequest = try HTTPClient.Request(
                url: hop.url, method: HTTPMethod(rawValue: hop.method), headers: headers)
        } catch {
            return hopEnded(.failure(error))
        }
        // AsyncHTTPClient logs only at debug and trace, yet attaches request metadata to any logger it is given:
        // with a less verbose logger it gets none (its own disabled one), which saves that work per request.
        let task = client.execute(
            request: httpRequest, delegate: TransferDelegate(transfer: self), eventLoop: .indifferent,
            logger: loader.logger.logLevel <= .debug ? loader.logger : nil)
        let action = inner.withLock { inner -> TransferStateMachine.TaskAction in
            inner.task = task
            return inner.machine.taskStarted()
        }
        switch action {
        case .none: break
        case .cancel: task.cancel()
        case .fail(let error): task.fail(reason: error)
        }
        task.futureResult.whenComplete { result in self.hopEnded(result) }
    }

    /// A hop's task ended (on its event loop).
    private func hopEnded(_ result: Result<Void, any Error>) {
        let jitter = result.isSuccess ? 1 : Double.random(in: 0.8...1.2)
        let outcome = inner.withLock { inner -> HopOutcome in
            inner.task = nil
            let action: TransferStateMachine.HopEndAction
            switch result {
            case .success: action = inner.machine.hopSucceeded()
            case .failure(let error):
                action = inner.machine.hopFailed(HTTPErrorMapping.imageError(from: error), jitter: jitter)
            }
            // The ending travels in the settlement only: copying it (callers, result, response) costs per request.
            if case .end(let ending) = action { return .ended(Self.settle(ending, &inner)) }
            return .next(action)
        }
        switch outcome {
        case .ended(let settlement): conclude(settlement, inline: true)
        case .next(let action): perform(action)
        }
    }

    private enum HopOutcome {
        case ended(Settlement)
        case next(TransferStateMachine.HopEndAction)
    }

    /// Performs what a hop's end or a retry's back-off decided; an ending is settled where it is decided.
    private func perform(_ action: TransferStateMachine.HopEndAction) {
        switch action {
        case .none:
            break
        case .send(let send):
            execute(send)
        case .retry(let attempt, let delay, let error):
            loader.recordRetry(of: self, attempt: attempt, delay: Double(delay) / 1e9, error: error)
            loader.eventLoop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) { self.retryDue() }
        case .end:
            break  // hopEnded settles it under the lock that decided it; retryDue never ends a transfer
        case .releaseSlot:
            loader.transferDone(self, leavesQueue: false, releasesSlot: true)
        }
    }

    private func retryDue() {
        let action = inner.withLock { $0.machine.retryDue() }
        perform(action)
    }

    /// The watchdog's tick (on the loader's event loop): ends the transfer when its deadline passed or it is too
    /// slow. Returns when to be checked next (nanoseconds), or nil when it no longer needs watching.
    func enforcePace(now: UInt64) -> UInt64? {
        let (action, task, settlement) = inner.withLock {
            inner -> (TransferStateMachine.PaceAction, HTTPClient.Task<Void>?, Settlement?) in
            let action = inner.machine.paceCheck(now: now)
            if case .end(let ending) = action { return (action, nil, Self.settle(ending, &inner)) }
            return (action, inner.task, nil)
        }
        switch action {
        case .checkAgain(let interval):
            return interval
        case .stopWatching:
            return nil
        case .failTask(let error):
            loader.logger.debug(
                "HTTP transfer too slow",
                metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error)"])
            // Without a task yet, `taskStarted` fails the one being created.
            task?.fail(reason: error)
            return nil
        case .end:
            if let settlement { conclude(settlement, inline: true) }
            return nil
        }
    }

    // MARK: Ending

    /// Under the lock: takes the ending's callers out and queues their completions (and a last progress report).
    static func settle(_ ending: TransferStateMachine.Ending, _ inner: inout Inner) -> Settlement {
        var batch: [Delivery] = []
        let data = inner.body
        let codings = ending.result.isSuccess ? inner.codings : []
        if case .success = ending.result {
            inner.body = Data()
            if let report = ending.finalReport {
                for listener in report.listeners {
                    guard let progress = inner.callers[listener.id]?.progress else { continue }
                    batch.append(
                        .progress(
                            progress,
                            LoadProgress(
                                receivedBytes: report.received, expectedBytes: report.expected,
                                partialData: listener.progressive && codings.isEmpty ? data : nil)))
                }
            }
        }
        let result = ending.result.map { LoadedImageData(data: data, response: $0) }
        for subscriber in ending.complete {
            guard let caller = inner.callers.removeValue(forKey: subscriber.id) else { continue }
            batch.append(
                .completion(
                    caller, result, personal: subscriber.personalResponse,
                    headerCheck: subscriber.awaitsHeaderCheck ? caller.headerCheck : nil, codings: codings))
        }
        var settlement = Settlement(
            ending: ending, task: ending.cancelsTask ? inner.task : nil, batch: inner.deliveries.claim(batch))
        settlement.decodesBody = !codings.isEmpty
        return settlement
    }

    /// Outside the lock: reports the outcome, cancels the task, gives the slot back and runs the callbacks.
    func conclude(_ settlement: Settlement, inline: Bool) {
        let ending = settlement.ending
        report(ending)
        settlement.task?.cancel()
        loader.transferDone(self, leavesQueue: ending.leavesQueue, releasesSlot: ending.releasesSlot)
        guard let batch = settlement.batch else { return }
        // Inflating a body is CPU work of up to the size limit: never on the event loop.
        if inline && loader.callbackQueue == nil && !settlement.decodesBody {
            drain(batch)
        } else {
            drainLater(batch)
        }
    }

    // MARK: Deliveries

    /// Runs `batch` and whatever is queued behind it on the configured callback queue, else a Dispatch queue.
    func drainLater(_ batch: [Delivery]) {
        (loader.callbackQueue ?? HTTPLoader.callbackTarget).async { self.drain(batch) }
    }

    /// Runs deliveries on this thread until the queue is empty (this thread claimed it).
    func drain(_ first: [Delivery]) {
        var batch = first
        while true {
            for delivery in batch { run(delivery) }
            batch = inner.withLock { inner in
                guard !inner.deliveries.pending.isEmpty else {
                    inner.deliveries.draining = false
                    return []
                }
                defer { inner.deliveries.pending = [] }
                return inner.deliveries.pending
            }
            if batch.isEmpty { return }
        }
    }

    /// Runs deliveries this thread claimed on an event loop of this transfer (here, or on the configured callback
    /// queue). A batch is always claimed under the lock that decided it (`Deliveries.claim`): claimed later, a
    /// progress report decided before a caller's cancel could be queued behind that caller's completion.
    func drainClaimed(_ claimed: [Delivery]) {
        if loader.callbackQueue == nil {
            drain(claimed)
        } else {
            drainLater(claimed)
        }
    }

    private func run(_ delivery: Delivery) {
        switch delivery {
        case .progress(let progress, let report):
            progress(report)
        case .completion(let caller, let result, let personal, let headerCheck, let codings):
            let result = codings.isEmpty ? result : decodedOnce(result, codings)
            caller.completion(
                Self.personalize(
                    result, for: caller, personalResponse: personal, headerCheck: headerCheck,
                    acceptable: loader.responseValidator))
        }
    }

    /// `result` with its body's content coding removed, once for every caller of the transfer.
    private func decodedOnce(
        _ result: Result<LoadedImageData, ImageError>, _ codings: [ContentCoding]
    ) -> Result<LoadedImageData, ImageError> {
        let limit = loader.transferRules.maximumResponseSize
        return decoded.withLock { memo in
            if let memo { return memo }
            let made = result.flatMap { loaded -> Result<LoadedImageData, ImageError> in
                do throws(ImageError) {
                    var decoded = loaded
                    decoded.data = try ContentCoding.decode(loaded.data, codings, limit: limit)
                    return .success(decoded)
                } catch {
                    return .failure(error.attaching(response: loaded.response))
                }
            }
            memo = made
            return made
        }
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
