import AsyncHTTPClient
import Dispatch
import Foundation
import ImageCore
import NIOCore
import NIOHTTP1

/// The delegate events of a transfer (on the task's event loop): heads, redirects, body parts, header checks.
extension Transfer {
    /// With a client of the caller's own that follows redirects, hops are seen only here, after the fact: the
    /// redirect filter still fails the load (before its body is used), though the target was contacted.
    func visited(_ request: HTTPClient.Request, head: HTTPResponseHead) {
        guard !loader.followsRedirectsItself else { return }
        if self.request.handleCookies {
            loader.cookieJar.store(setCookieHeaders: head.headers["set-cookie"], from: request.url)
        }
        guard let filter = loader.configuration.redirectFilter else { return }
        let previous = inner.withLock { inner -> URL? in
            defer { inner.hop.url = request.url }
            return inner.hop.url
        }
        if let previous, previous != request.url, !filter(previous, request.url) {
            let error = Self.redirectRefused(from: previous, to: request.url)
            inner.withLock { $0.abortError = $0.abortError ?? error }
        }
    }

    /// Vets a response head: follows a redirect, applies the response modifiers, checks status, content type and
    /// size per caller. A returned error aborts the transfer (and closes the connection).
    func receivedHead(_ head: HTTPResponseHead) -> ImageError? {
        let configuration = loader.configuration
        let status = Int(head.status.code)
        let (hop, redirects, visited, abortError) = inner.withLock { ($0.hop, $0.redirects, $0.visited, $0.abortError) }
        if let abortError { return abortError }
        if request.handleCookies && loader.followsRedirectsItself {
            loader.cookieJar.store(setCookieHeaders: head.headers["set-cookie"], from: hop.url)
        }
        if loader.followsRedirectsItself, RedirectPolicy.redirectStatuses.contains(status) {
            switch RedirectPolicy.decide(
                after: hop, status: status, location: head.headers.first(name: "location"), redirects: redirects,
                visited: visited.isEmpty ? [request.key.url] : visited, maximum: configuration.maximumRedirects)
            {
            case .final:
                break
            case .fail(let error):
                return error
            case .follow(var next):
                if let filter = configuration.redirectFilter, !filter(hop.url, next.url) {
                    return Self.redirectRefused(from: hop.url, to: next.url)
                }
                if request.handleCookies {
                    next[header: "Cookie"] = loader.cookieJar.cookieHeader(for: next.url)
                }
                loader.logger.debug(
                    "HTTP transfer redirected",
                    metadata: ["transfer": "\(id)", "from": "\(hop.url.absoluteString)", "to": "\(next.url)"])
                inner.withLock { $0.nextHop = next }
                return nil
            }
        }

        var response = HTTPResponseParsing.metadata(head: head, url: hop.url)
        let wireLength = response.expectedContentLength
        loader.events.yield(
            HTTPLoaderEvent(transferID: id, url: url, kind: .response(statusCode: status, expectedBytes: wireLength)))
        if let modifier = configuration.responseModifier {
            // User code: called without holding any lock.
            guard let modified = modifier.modifiedResponse(for: response) else { return Self.refusedByModifier() }
            response = modified
        }
        if let length = wireLength, length > configuration.maximumResponseSize {
            return Self.tooLarge("Content-Length \(length)", limit: configuration.maximumResponseSize)
        }

        // Callers with a response modifier of their own see their own response; status and content type are
        // checked after every modifier, per caller.
        let modifying = inner.withLock { inner in
            inner.callers.compactMap { id, caller in caller.responseModifier.map { (id, $0) } }
        }
        var personal: [UInt64: ResponseMetadata] = [:]
        var failures: [UInt64: ImageError] = [:]
        for (subscriber, modifier) in modifying {
            if let modified = modifier.modifiedResponse(for: response) {
                if let error = loader.responseValidator.error(for: modified) {
                    failures[subscriber] = error
                } else {
                    personal[subscriber] = modified
                }
            } else {
                failures[subscriber] = Self.refusedByModifier()
            }
        }
        let sharedError = loader.responseValidator.error(for: response)
        if let sharedError, personal.isEmpty {
            // Nobody can use this response. Callers with their own verdict get it; the rest get the shared one
            // through the normal ending (so a retry policy still sees a 5xx).
            if !failures.isEmpty, drop(failures, abortWith: sharedError) { return failures.values.first }
            return sharedError
        }
        let finalResponse = response
        let outcome = inner.withLock { inner -> [UInt64: ImageError] in
            if let sharedError {
                // Callers without a modifier of their own cannot use the response; the others continue.
                for id in inner.callers.keys where inner.callers[id]?.responseModifier == nil {
                    failures[id] = sharedError
                }
            }
            for (id, modified) in personal where inner.callers[id] != nil { inner.personalResponses[id] = modified }
            inner.response = finalResponse
            inner.machine.headReceived(expected: wireLength)
            if let length = wireLength, inner.body.isEmpty {
                inner.body.reserveCapacity(min(length, configuration.maximumResponseSize))
            }
            return failures
        }
        if !outcome.isEmpty, drop(outcome, abortWith: sharedError ?? outcome.values.first) {
            return sharedError ?? outcome.values.first
        }
        return nil
    }

    /// Appends a body part, reports progress and runs pending header checks; a returned error aborts the transfer.
    func receivedBody(_ buffer: ByteBuffer, eventLoop: any EventLoop) -> ImageError? {
        let limit = loader.configuration.maximumResponseSize
        let count = buffer.readableBytes
        let outcome = inner.withLock { inner -> BodyOutcome in
            inner.wireBytes += count
            if inner.nextHop != nil {
                inner.redirectBodyBytes += count
                guard inner.redirectBodyBytes <= Self.maximumRedirectBody else {
                    return .fail(Self.tooLarge("redirect body", limit: Self.maximumRedirectBody))
                }
                return .none
            }
            guard inner.body.count + count <= limit else {
                return .fail(Self.tooLarge("more than \(limit) bytes streamed", limit: limit))
            }
            buffer.withUnsafeReadableBytes { inner.body.append(contentsOf: $0) }
            let now = inner.machine.hasListeners ? DispatchTime.now().uptimeNanoseconds : 0
            let action = inner.machine.bodyReceived(count, now: now)
            let checks = inner.pendingChecks.isEmpty ? nil : (inner.body, inner.pendingChecks)
            switch action {
            case .none: return .checks(checks)
            case .report(let report): return .report(pending(report, inner: inner), checks)
            case .scheduleFlush(let delay): return .flush(delay, checks)
            }
        }
        var checks: (Data, [UInt64: DownloadHeaderCheck])?
        switch outcome {
        case .fail(let error):
            return error
        case .none:
            return nil
        case .checks(let pending):
            checks = pending
        case .report(let report, let pending):
            deliver(report)
            checks = pending
        case .flush(let delay, let pending):
            eventLoop.scheduleTask(in: .nanoseconds(Int64(delay))) { self.flushProgress() }
            checks = pending
        }
        guard let (prefix, pending) = checks else { return nil }
        return runHeaderChecks(pending, on: prefix)
    }

    private enum BodyOutcome {
        case none
        case fail(ImageError)
        case checks((Data, [UInt64: DownloadHeaderCheck])?)
        case report(PendingReport, (Data, [UInt64: DownloadHeaderCheck])?)
        case flush(UInt64, (Data, [UInt64: DownloadHeaderCheck])?)
    }

    /// Calls each caller's check with every byte so far (user code, no lock held); a rejecting caller fails alone
    /// with the check's error, and when every caller rejected, the transfer stops with that error.
    private func runHeaderChecks(_ checks: [UInt64: DownloadHeaderCheck], on prefix: Data) -> ImageError? {
        var decided: [UInt64] = []
        var rejected: [UInt64: ImageError] = [:]
        for (subscriber, check) in checks {
            switch check(prefix) {
            case .needMoreData: continue
            case .accept: decided.append(subscriber)
            case .reject(let error): rejected[subscriber] = error
            }
        }
        if !decided.isEmpty {
            inner.withLock { inner in for subscriber in decided { inner.pendingChecks[subscriber] = nil } }
        }
        guard let error = rejected.values.first else { return nil }
        loader.logger.debug(
            "HTTP transfer refused by a header check",
            metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error)"])
        return drop(rejected, abortWith: error) ? error : nil
    }

    typealias PendingReport = (
        report: TransferStateMachine.ProgressReport, partial: Data?, callers: [UInt64: Caller], queue: DispatchQueue
    )

    private func flushProgress() {
        let now = DispatchTime.now().uptimeNanoseconds
        let pending = inner.withLock { inner -> PendingReport? in
            inner.machine.flush(now: now).map { self.pending($0, inner: inner) }
        }
        if let pending { deliver(pending) }
    }

    /// The report plus what delivering it needs: the bytes for progressive callers and their callbacks.
    private func pending(_ report: TransferStateMachine.ProgressReport, inner: Inner) -> PendingReport {
        let partial = report.subscribers.contains { $0.progressive } ? inner.body.prefix(report.received) : nil
        return (report, partial, inner.callers, Self.queue(inner))
    }

    private func deliver(_ pending: PendingReport) {
        let (report, partialData, callers, queue) = pending
        let targets = report.subscribers.compactMap { subscriber in
            callers[subscriber.id]?.progress.map { ($0, subscriber.progressive) }
        }
        guard !targets.isEmpty else { return }
        queue.async {
            for (progress, progressive) in targets {
                progress(
                    LoadProgress(
                        receivedBytes: report.received, expectedBytes: report.expected,
                        partialData: progressive ? partialData : nil))
            }
        }
    }

    static func tooLarge(_ detail: String, limit: Int) -> ImageError {
        ImageError(.downloadTooLarge, stage: .download, message: "\(detail) (limit \(limit))")
    }

    static func refusedByModifier() -> ImageError {
        ImageError(.invalidDownloadResponse, stage: .download, message: "the response modifier refused it")
    }

    static func redirectRefused(from: URL, to: URL) -> ImageError {
        ImageError(
            .redirectRefused, stage: .download,
            message: "the redirect filter refused \(from.absoluteString) → \(to.absoluteString)")
    }
}
