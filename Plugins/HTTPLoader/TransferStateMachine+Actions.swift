import Foundation
import ImageCore

/// The events' vocabulary: what the machine is told about and what it asks the shell to do.
extension TransferStateMachine {
    /// The limits and policies a transfer runs under (from ``HTTPLoaderConfiguration`` and the request).
    struct Rules: Sendable {
        /// Minimum bytes between two progress reports.
        var progressByteInterval = 64 * 1024
        /// Minimum nanoseconds between two progress reports.
        var progressTimeInterval: UInt64 = 50_000_000
        /// The loader follows redirects itself (false when a client given by the user follows them).
        var followsRedirects = true
        /// ``HTTPLoaderConfiguration/maximumRedirects``.
        var maximumRedirects = 5
        /// The body of a redirect response is read and dropped (so the connection stays reusable) up to this size.
        var maximumRedirectBody = 256 * 1024
        /// ``HTTPLoaderConfiguration/maximumResponseSize``.
        var maximumResponseSize = 64 << 20
        /// The total deadline in seconds from the first send (``TransferPace``); infinite means none.
        var timeout: Double = .infinity
        /// ``HTTPLoaderConfiguration/minimumTransferRate``.
        var minimumRate: HTTPTransferRate?
        /// ``HTTPLoaderConfiguration/retry``.
        var retry: HTTPRetryPolicy?
    }

    enum State: Sendable, Equatable {
        /// Waiting for a slot in the loader's queue.
        case queued
        /// A hop is out; `headReceived` once the final response head arrived.
        case running(headReceived: Bool)
        /// Waiting out a retry's back-off before sending attempt `attempt`; holds the slot, no task runs.
        case waitingToRetry(attempt: Int)
        /// Completed, failed or abandoned: no subscriber is left and no event has an effect.
        case finished
    }

    struct Subscriber: Sendable, Equatable {
        let id: SubscriberID
        /// Wants `partialData` with its progress (``ImageOptions/progressiveLoad``).
        let progressive: Bool
        /// Has a progress callback; when no subscriber has one, no progress work is done at all.
        var wantsProgress = true
        /// Its place in the loader's queue; the transfer's is the highest of its subscribers'.
        var priority: DownloadPriority = .normal
        /// Has a response modifier of its own, so it judges the response head itself.
        var modifiesResponse = false
        /// Its header check has not answered yet.
        var awaitsHeaderCheck = false
        /// Its own view of the response, decided by its modifier when the head arrived.
        var personalResponse: ResponseMetadata?
    }

    /// Who gets a progress report.
    struct Listener: Sendable, Equatable {
        let id: SubscriberID
        let progressive: Bool
    }

    /// A progress report for some subscribers.
    struct ProgressReport: Sendable, Equatable {
        var listeners: [Listener]
        var received: Int
        var expected: Int?
    }

    /// One hop to send: the request, then each redirect the loader follows, of attempt `attempt`.
    struct Send: Sendable {
        let request: ImageRequest
        let attempt: Int
        /// A redirect hop (not the start of an attempt).
        let isRedirect: Bool
    }

    /// The one end of a transfer.
    struct Ending: Sendable {
        /// Subscribers to complete with ``result`` (each with its own response, if it had one).
        var complete: [Subscriber]
        /// The final response (the shell holds the bytes), or the error, carrying the response when one came.
        var result: Result<ResponseMetadata, ImageError>
        /// A last progress report (success only) when the final byte count was not reported yet.
        var finalReport: ProgressReport?
        /// Give the download slot back now; false while a task still runs (its end releases it) or when the
        /// transfer never had one.
        var releasesSlot: Bool
        /// Cancel the running HTTP task (the last caller left, or the loader cancelled everything).
        var cancelsTask: Bool
        /// The transfer still sits in the loader's queue: take it out.
        var leavesQueue: Bool
        /// Bytes received in all hops and attempts.
        var wireBytes: Int
        /// Body bytes of the final response.
        var bodyBytes: Int
        /// When the first hop was sent (nanoseconds), nil when none was.
        var startedAt: UInt64?
    }

    enum JoinAction: Sendable, Equatable {
        /// Joined; deliver `replay` (bytes already received) to the new subscriber first, if any.
        case joined(replay: ProgressReport?)
        /// The transfer already ended; the caller must start a new one.
        case transferEnded
    }

    enum LeaveAction: Sendable {
        /// Unknown or already completed subscriber: nothing to do (completion is never delivered twice).
        case none
        /// Complete only this subscriber.
        case completeSubscriber
        /// Complete this subscriber; it was the last one, so the transfer ends as described.
        case completeSubscriberAndEnd(Ending)
    }

    enum StartAction: Sendable {
        /// Send the first hop; watch the transfer's pace every `watchEvery` nanoseconds (nil: not watched).
        case send(Send, watchEvery: UInt64?)
        /// Everyone left before the slot came: give the slot back without sending anything.
        case releaseSlot
    }

    /// What to do with the HTTP task the shell just created for a ``Send``.
    enum TaskAction: Sendable {
        case none
        /// Everyone left meanwhile.
        case cancel
        /// The deadline passed meanwhile.
        case fail(ImageError)
    }

    /// The verdict on a response head.
    enum HeadAction: Sendable {
        /// The final response: judge it (modifiers, status, content type), then call ``responseArrived``.
        case final
        /// A redirect to follow: let the redirect filter judge `next`, then call ``followRedirect(to:)`` (or fail
        /// the task with the filter's refusal).
        case redirect(ImageRequest)
        /// Fail the task with this error.
        case refuse(ImageError)
    }

    /// What follows from the final head or the header checks.
    struct Verdict: Sendable {
        /// Subscribers that fail now, each with its own error.
        var failed: [(Subscriber, ImageError)] = []
        /// Fail the HTTP task with this error (nobody can use the response).
        var refusal: ImageError?
        /// Nobody is left: the transfer ends (already reported here; the task's end only releases the slot).
        var ending: Ending?
    }

    enum BodyAction: Sendable {
        /// Keep the bytes; nothing else to do.
        case keep
        /// Keep the bytes and deliver this report now.
        case keepAndReport(ProgressReport)
        /// Keep the bytes; a report was held back: call ``flush(now:)`` after this many nanoseconds, so a stream
        /// that pauses never leaves callers with a stale count.
        case keepAndFlushLater(afterNanoseconds: UInt64)
        /// Drop the bytes: the body of a redirect response (or of a transfer that ended).
        case discard
        /// Fail the task with this error (a size limit).
        case refuse(ImageError)
    }

    /// What follows from the end of a hop, or from a retry's back-off.
    enum HopEndAction: Sendable {
        case none
        /// Send the next hop (a redirect, or the retried attempt).
        case send(Send)
        /// Wait, then call ``retryDue()``.
        case retry(attempt: Int, afterNanoseconds: UInt64, error: ImageError)
        case end(Ending)
        /// The transfer had ended already; its task is gone now, so the slot is free.
        case releaseSlot
    }

    enum PaceAction: Sendable {
        /// Check again after this many nanoseconds.
        case checkAgain(afterNanoseconds: UInt64)
        /// Nothing to watch any more.
        case stopWatching
        /// Fail the running task with this error (its end then ends the transfer with it).
        case failTask(ImageError)
        /// No task runs (between attempts): the transfer ends now.
        case end(Ending)
    }
}
