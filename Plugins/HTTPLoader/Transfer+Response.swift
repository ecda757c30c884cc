import AsyncHTTPClient
import Foundation
import ImageCore
import NIOCore
import NIOHTTP1

/// The response side of a transfer, called by ``TransferDelegate`` on the task's event loop: the head (redirects,
/// modifiers, status and content type per caller), the body (limits, progress, header checks).
///
/// User code — the redirect filter, response modifiers, header checks — runs here without any lock held; what
/// follows from its answers is the state machine's decision. A returned error fails the task (AsyncHTTPClient
/// then closes the connection).
extension Transfer {
    /// A redirect AsyncHTTPClient followed itself (a client given by the user): the filter judges the hop, and a
    /// refused one fails the transfer when the next head arrives.
    func visited(_ request: HTTPClient.Request, head: HTTPResponseHead) {
        // Called for every response head: the flag first, so the common case reads nothing else.
        guard !loader.followsRedirectsItself, let filter = loader.configuration.redirectFilter else { return }
        let previous = inner.withLock { inner in
            defer { inner.lastVisited = request.url }
            return inner.lastVisited
        }
        guard let previous, previous != request.url, !filter(previous, request.url) else { return }
        let error = Self.redirectRefused(from: previous, to: request.url)
        _ = inner.withLock { $0.machine.abort(with: error) }
    }

    /// Vets a response head; a returned error aborts the transfer.
    func receivedHead(_ head: HTTPResponseHead) -> ImageError? {
        let status = Int(head.status.code)
        let location = RedirectPolicy.isRedirect(status) ? head.headers.first(name: "location") : nil
        let (action, hopURL) = inner.withLock { inner in
            (inner.machine.headReceived(status: status, location: location), inner.machine.hop.url)
        }
        if request.handleCookies && loader.followsRedirectsItself {
            loader.cookieJar.store(
                setCookieHeaders: head.headers["set-cookie"], from: hopURL, partition: request.cookiePartition)
        }
        switch action {
        case .refuse(let error):
            return error
        case .redirect(var next):
            if let filter = loader.configuration.redirectFilter, !filter(hopURL, next.url) {
                return Self.redirectRefused(from: hopURL, to: next.url)
            }
            if request.handleCookies {
                next[header: "Cookie"] = loader.cookieJar.cookieHeader(
                    for: next.url, partition: request.cookiePartition)
            }
            loader.logger.debug(
                "HTTP transfer redirected",
                metadata: ["transfer": "\(id)", "from": "\(hopURL.absoluteString)", "to": "\(next.url)"])
            inner.withLock { $0.machine.followRedirect(to: next) }
            return nil
        case .final:
            return judge(head, status: status, url: hopURL)
        }
    }

    /// The final head: the configuration's response modifier, then each caller's own, then the status and
    /// content-type rules, per caller; the machine decides who continues.
    private func judge(_ head: HTTPResponseHead, status: Int, url hopURL: URL) -> ImageError? {
        var response = HTTPResponseParsing.metadata(head: head, url: hopURL)
        let wireLength = response.expectedContentLength
        loader.events.yield(
            HTTPLoaderEvent(transferID: id, url: url, kind: .response(statusCode: status, expectedBytes: wireLength)))
        if let modifier = loader.configuration.responseModifier {
            // User code: called without holding any lock.
            guard let modified = modifier.modifiedResponse(for: response) else {
                return TransferStateMachine.refusedByModifier().attaching(response: response)
            }
            response = modified
        }
        // The body's coding is a fact of the wire, whatever a modifier made of the response. Only a 2xx body is an
        // image: the body of a 3xx a caller takes as an answer (to follow it itself) is never read.
        let coding =
            (200..<300).contains(status) && head.headers.contains(name: "content-encoding")
            ? ContentCoding.codings(head.headers["content-encoding"].joined(separator: ","))
            : .success([])
        var sharedError = loader.responseValidator.error(for: response)?.attaching(response: response)
        if sharedError == nil, case .failure(let refusal) = coding {
            sharedError = refusal.attaching(response: response)
        }
        let codings = (try? coding.get()) ?? []
        let maximum = loader.transferRules.maximumResponseSize
        func apply(
            _ inner: inout Inner, _ verdicts: [UInt64: Result<ResponseMetadata, ImageError>]
        ) -> (TransferStateMachine.Verdict, [Delivery]?, Settlement?) {
            let verdict = inner.machine.responseArrived(
                response, wireLength: wireLength, sharedError: sharedError, verdicts: verdicts)
            inner.codings = codings
            if verdict.refusal == nil, let length = wireLength, inner.body.isEmpty {
                inner.body.reserveCapacity(min(length, maximum))
            }
            return (verdict, Self.failures(verdict, &inner), verdict.ending.map { Self.settle($0, &inner) })
        }
        // Without callers' own response modifiers (the common case) the verdict is applied under the same lock
        // that finds there are none: one lock per head instead of two.
        let first = inner.withLock { inner -> HeadJudgement in
            let modifying = inner.machine.subscribers.compactMap { subscriber in
                subscriber.modifiesResponse
                    ? inner.callers[subscriber.id]?.responseModifier.map { (subscriber.id, $0) } : nil
            }
            guard modifying.isEmpty else { return .modifiers(modifying) }
            return .judged(apply(&inner, [:]))
        }
        let verdict: TransferStateMachine.Verdict
        let failures: [Delivery]?
        let settlement: Settlement?
        switch first {
        case .judged(let judged):
            (verdict, failures, settlement) = judged
        case .modifiers(let modifying):
            var verdicts: [UInt64: Result<ResponseMetadata, ImageError>] = [:]
            for (subscriber, modifier) in modifying {
                guard let modified = modifier.modifiedResponse(for: response) else {
                    verdicts[subscriber] = .failure(
                        TransferStateMachine.refusedByModifier().attaching(response: response))
                    continue
                }
                verdicts[subscriber] =
                    loader.responseValidator.error(for: modified).map { .failure($0.attaching(response: modified)) }
                    ?? .success(modified)
            }
            (verdict, failures, settlement) = inner.withLock { apply(&$0, verdicts) }
        }
        if let failures { drainClaimed(failures) }
        if let settlement { conclude(settlement, inline: true) }
        return verdict.refusal
    }

    private enum HeadJudgement {
        /// The verdict, the callers it failed and the ending it caused.
        case judged((TransferStateMachine.Verdict, [Delivery]?, Settlement?))
        /// Callers with response modifiers of their own: their modifiers run first, outside the lock.
        case modifiers([(UInt64, any ResponseModifier)])
    }

    /// Under the lock: the completions of the callers a verdict failed.
    private static func failures(_ verdict: TransferStateMachine.Verdict, _ inner: inout Inner) -> [Delivery]? {
        guard !verdict.failed.isEmpty else { return nil }
        // Claimed in the queue under the same lock that removed the callers: no delivery made earlier for them can
        // be queued behind their completion.
        return inner.deliveries.claim(
            verdict.failed.compactMap { subscriber, error in
                inner.callers.removeValue(forKey: subscriber.id).map {
                    .completion($0, .failure(error), personal: nil, headerCheck: nil)
                }
            })
    }

    /// Appends a body part, reports progress and runs pending header checks; a returned error aborts the transfer.
    func receivedBody(_ buffer: ByteBuffer, eventLoop: any EventLoop) -> ImageError? {
        let count = buffer.readableBytes
        let outcome = inner.withLock { inner -> BodyOutcome in
            let now = inner.machine.hasListeners ? NIODeadline.now().uptimeNanoseconds : 0
            let action = inner.machine.bodyReceived(count, now: now)
            switch action {
            case .discard: return BodyOutcome()
            case .refuse(let error): return BodyOutcome(refusal: error)
            case .keep, .keepAndReport, .keepAndFlushLater: break
            }
            buffer.withUnsafeReadableBytes { inner.body.append(contentsOf: $0) }
            var outcome = BodyOutcome()
            switch action {
            // Claimed under this lock: a completion queued after it (a cancel, an ending) can't overtake it.
            case .keepAndReport(let report):
                outcome.deliveries = inner.deliveries.claim(Self.progress(report, inner: inner))
            case .keepAndFlushLater(let delay): outcome.flushAfter = delay
            default: break
            }
            // A coded body's prefix is not the image's: its header checks run on the decoded body at the end.
            if inner.machine.pendingHeaderChecks > 0, inner.codings.isEmpty {
                var checks: [UInt64: DownloadHeaderCheck] = [:]
                for subscriber in inner.machine.subscribers where subscriber.awaitsHeaderCheck {
                    checks[subscriber.id] = inner.callers[subscriber.id]?.headerCheck
                }
                outcome.checks = (inner.body, checks)
            }
            return outcome
        }
        if let refusal = outcome.refusal { return refusal }
        if let deliveries = outcome.deliveries { drainClaimed(deliveries) }
        if let delay = outcome.flushAfter {
            eventLoop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) { self.flushProgress() }
        }
        guard let (prefix, checks) = outcome.checks else { return nil }
        return runHeaderChecks(checks, on: prefix)
    }

    private struct BodyOutcome {
        var refusal: ImageError?
        var deliveries: [Delivery]?
        var flushAfter: UInt64?
        var checks: (Data, [UInt64: DownloadHeaderCheck])?
    }

    /// Calls each caller's check with every byte so far (user code, no lock held); the machine fails a rejecting
    /// caller alone and ends the transfer when nobody is left.
    private func runHeaderChecks(_ checks: [UInt64: DownloadHeaderCheck], on prefix: Data) -> ImageError? {
        var accepted: [UInt64] = []
        var rejected: [UInt64: ImageError] = [:]
        for (subscriber, check) in checks {
            switch check(prefix) {
            case .needMoreData: continue
            case .accept: accepted.append(subscriber)
            case .reject(let error): rejected[subscriber] = error
            }
        }
        guard !accepted.isEmpty || !rejected.isEmpty else { return nil }
        if let error = rejected.values.first {
            loader.logger.debug(
                "HTTP transfer refused by a header check",
                metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error)"])
        }
        let (verdict, failures, settlement) = inner.withLock { inner in
            let verdict = inner.machine.headerChecksAnswered(accepted: accepted, rejected: rejected)
            return (verdict, Self.failures(verdict, &inner), verdict.ending.map { Self.settle($0, &inner) })
        }
        if let failures { drainClaimed(failures) }
        if let settlement { conclude(settlement, inline: true) }
        return verdict.refusal
    }

    private func flushProgress() {
        let now = NIODeadline.now().uptimeNanoseconds
        let deliveries = inner.withLock { inner in
            inner.machine.flush(now: now).flatMap { inner.deliveries.claim(Self.progress($0, inner: inner)) }
        }
        if let deliveries { drainClaimed(deliveries) }
    }

    /// The deliveries of `report`: every listener's callback, the bytes so far for progressive ones.
    private static func progress(_ report: TransferStateMachine.ProgressReport, inner: Inner) -> [Delivery] {
        let partial =
            report.listeners.contains { $0.progressive } && inner.codings.isEmpty
            ? inner.body.prefix(report.received) : nil
        return report.listeners.compactMap { listener in
            inner.callers[listener.id]?.progress.map { progress in
                .progress(
                    progress,
                    LoadProgress(
                        receivedBytes: report.received, expectedBytes: report.expected,
                        partialData: listener.progressive ? partial : nil))
            }
        }
    }

    static func redirectRefused(from: URL, to: URL) -> ImageError {
        ImageError(
            .redirectRefused, stage: .download,
            message: "the redirect filter refused \(from.absoluteString) → \(to.absoluteString)")
    }
}
