import Foundation
import ImageCore

/// How a transfer ends: hop ends, retries, the deadline, aborts — and the one transition into `.finished`.
extension TransferStateMachine {
    /// The current hop's task ended without error.
    mutating func hopSucceeded() -> HopEndAction {
        taskActive = false
        guard state != .finished else { return releaseOwedSlot() }
        if let next = nextHop {
            nextHop = nil
            redirects += 1
            if visited.isEmpty { visited.insert(original.url.absoluteString) }
            visited.insert(next.url.absoluteString)
            hop = next
            response = nil
            state = .running(headReceived: false)
            taskActive = true
            return .send(Send(request: next, attempt: attempt, isRedirect: true))
        }
        guard let response else {
            return .end(
                end(.failure(ImageError(.invalidDownloadResponse, stage: .download, message: "no response head"))))
        }
        if response.statusCode == 304 {
            return .end(end(.failure(Self.notModified)))
        }
        if let expected = response.expectedContentLength, expected != receivedBytes {
            // AsyncHTTPClient reports short bodies itself; this guards against a silent truncation anyway.
            return .end(
                end(
                    .failure(
                        ImageError(
                            .downloadFailed, stage: .download, message: "received \(receivedBytes) of \(expected) bytes"
                        )
                    )))
        }
        return .end(end(.success(response)))
    }

    /// The current hop's task failed with `error` (already mapped to an ``ImageError``); `jitter` (0.8…1.2)
    /// spreads retries; `now` dates a `Retry-After` that is a date when its answer has no `Date`.
    ///
    /// An answer's `Retry-After` (RFC 9110 §10.2.3) is the least wait before its retry; one longer than the policy's
    /// `maxDelay` ends the transfer with the answer instead (retrying sooner ignores the origin, waiting holds the
    /// load longer than its owner allowed).
    mutating func hopFailed(_ error: ImageError, jitter: Double = 1, now: Date = Date()) -> HopEndAction {
        taskActive = false
        guard state != .finished else { return releaseOwedSlot() }
        let error = abortError ?? error
        if let policy = rules.retry, attempt < policy.maxAttempts, abortError == nil, receivedBytes == 0,
            Self.isRetryable(error)
        {
            var delay = policy.delay(beforeRetry: attempt, jitter: jitter)
            if let asked = error.response.flatMap({ Self.retryAfter($0.headers, now: now) }) {
                guard asked <= policy.maxDelay else { return .end(end(.failure(error))) }
                delay = max(delay, asked)
            }
            let next = attempt + 1
            state = .waitingToRetry(attempt: next)
            return .retry(attempt: next, afterNanoseconds: UInt64(min(max(0, delay), 1e9) * 1e9), error: error)
        }
        return .end(end(.failure(error)))
    }

    /// The seconds an answer's `Retry-After` asks for: delay-seconds, or an HTTP-date less the answer's `Date` (else
    /// `now`); nil when it has none or it is neither.
    static func retryAfter(_ headers: [String: String], now: Date) -> Double? {
        guard let value = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
            return nil
        }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return Double(value.prefix(12)) }
        guard let date = HTTPDateFormat.parse(value) else { return nil }
        let sent = headers["date"].flatMap(HTTPDateFormat.parse) ?? now
        return max(0, date.timeIntervalSince(sent))
    }

    /// A retry's back-off passed: send the attempt again from the first hop, or nothing when it ended meanwhile.
    mutating func retryDue() -> HopEndAction {
        guard case .waitingToRetry(let next) = state else { return .none }
        state = .running(headReceived: false)
        attempt = next
        hop = original
        nextHop = nil
        redirects = 0
        visited = []
        response = nil
        receivedBytes = 0
        expectedBytes = nil
        lastReportedBytes = 0
        for index in subscribers.indices { subscribers[index].personalResponse = nil }
        taskActive = true
        return .send(Send(request: original, attempt: next, isRedirect: false))
    }

    /// The watchdog's tick at `now`: ends the transfer when its deadline passed or it is too slow.
    mutating func paceCheck(now: UInt64) -> PaceAction {
        guard state != .finished, abortError == nil, var pace else { return .stopWatching }
        let verdict = pace.check(now: now, totalBytes: wireBytes)
        self.pace = pace
        guard let error = Self.paceError(verdict) else { return .checkAgain(afterNanoseconds: pace.checkInterval) }
        guard taskActive else {
            // Between attempts: no task to fail, the transfer ends here.
            return .end(end(.failure(error)))
        }
        abortError = error
        return .failTask(error)
    }

    /// The loader ends the transfer from outside (shutdown, cancelling all or one URL's downloads): every
    /// subscriber completes with `error`. Nil when it had ended already.
    mutating func abort(_ error: ImageError) -> Ending? {
        guard state != .finished else { return nil }
        return end(.failure(error), cancelsTask: true)
    }

    /// The one transition into `.finished` (nothing else sets it): completes every subscriber left, frees the slot
    /// unless a task still holds it, and says what to report.
    mutating func end(_ result: Result<ResponseMetadata, ImageError>, cancelsTask: Bool = false) -> Ending {
        let wasQueued = state == .queued
        state = .finished
        let complete = subscribers
        var finalReport: ProgressReport?
        if case .success = result, receivedBytes != lastReportedBytes, listeners > 0 {
            finalReport = ProgressReport(listeners: currentListeners, received: receivedBytes, expected: expectedBytes)
        }
        subscribers = []
        listeners = 0
        pendingHeaderChecks = 0
        let releases = slotHeld && !taskActive
        if releases { slotHeld = false }
        var result = result
        if case .failure(let error) = result, !error.isCancellation {
            result = .failure(error.attaching(response: response))
        }
        return Ending(
            complete: complete, result: result, finalReport: finalReport, releasesSlot: releases,
            cancelsTask: cancelsTask && taskActive, leavesQueue: wasQueued, wireBytes: wireBytes,
            bodyBytes: receivedBytes, startedAt: startedAt)
    }

    /// A finished transfer's task ended: the slot it held is free now (once).
    private mutating func releaseOwedSlot() -> HopEndAction {
        guard slotHeld else { return .none }
        slotHeld = false
        return .releaseSlot
    }

    // MARK: Rules

    /// True for failures a retry may fix: 5xx answers, 408 and 429 (the origin asks to be asked again later), and
    /// connection-level errors (not timeouts, not cancellation, not the loader's own refusals).
    static func isRetryable(_ error: ImageError) -> Bool {
        guard error.code == .invalidDownloadStatusCode, let status = error.statusCode else {
            return HTTPErrorMapping.isRetryableTransportError(error)
        }
        return status >= 500 || status == 408 || status == 429
    }

    static func paceError(_ verdict: TransferPace.Verdict) -> ImageError? {
        switch verdict {
        case .ok:
            return nil
        case .deadlineExceeded(let seconds):
            return ImageError(.timedOut, stage: .download, message: "the transfer took longer than \(seconds) s")
        case .tooSlow(let bytes, let seconds):
            return ImageError(
                .timedOut, stage: .download,
                message: "too slow: \(bytes) bytes in the last \((seconds * 1000).rounded() / 1000) s")
        }
    }

    static let notModified = ImageError(
        .cacheNotModified, stage: .download, message: "304 Not Modified", statusCode: 304)

    static func tooLarge(_ detail: String, limit: Int) -> ImageError {
        ImageError(.downloadTooLarge, stage: .download, message: "\(detail) (limit \(limit))")
    }

    static func refusedByModifier() -> ImageError {
        ImageError(.invalidDownloadResponse, stage: .download, message: "the response modifier refused it")
    }
}
