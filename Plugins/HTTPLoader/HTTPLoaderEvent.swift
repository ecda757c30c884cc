import Foundation
import ImageCore
import Synchronization

/// Something that happened to one transfer, for operators: see ``HTTPLoader/events(bufferingNewest:)``.
///
/// A transfer is one HTTP request (plus its redirects and retries) shared by every coalesced caller.
public struct HTTPLoaderEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable {
        /// The request was sent (after waiting for a slot); `attempt` counts retries from 1.
        case started(attempt: Int)
        /// Another caller joined the running or queued transfer; `callers` is the number sharing it now.
        case joined(callers: Int)
        /// The final response head arrived (after redirects).
        case response(statusCode: Int, expectedBytes: Int?)
        /// The transfer ended successfully (or with 304) after `bytes` body bytes.
        case finished(statusCode: Int, bytes: Int, duration: Duration)
        /// The transfer failed with `error`.
        case failed(ImageError, duration: Duration)
        /// The last caller left and the transfer was cancelled (or dropped from the queue).
        case cancelled
        /// A failed attempt will be retried after `delay` seconds.
        case retrying(attempt: Int, delay: Double, error: ImageError)
        /// A caller changed its priority and the transfer now has `priority` (the highest of its callers'): a
        /// queued transfer moved in the queue; a running one only records it (AsyncHTTPClient has no request
        /// priority and HTTP/1.1 none on the wire).
        case priorityChanged(DownloadPriority)
    }

    /// The transfer's identifier, unique within one loader.
    public let transferID: UInt64
    /// The URL requested.
    public let url: URL
    /// What happened.
    public let kind: Kind

    /// "#id url kind".
    public var description: String { "transfer #\(transferID) \(url.absoluteString): \(kind)" }
}

/// Fans events out to every live `AsyncStream`; yielding never blocks (the streams buffer and drop the oldest).
final class EventBroadcaster: Sendable {
    private struct State {
        var nextID = 0
        var continuations: [Int: AsyncStream<HTTPLoaderEvent>.Continuation] = [:]
    }

    private let state = Mutex(State())
    /// Mirrors `continuations.count`, so a loader nobody observes pays an atomic load per event, not a lock.
    private let listeners = Atomic<Int>(0)

    /// True when somebody listens; lets the loader skip building events nobody reads.
    var hasListeners: Bool { listeners.load(ordering: .acquiring) > 0 }

    func makeStream(bufferingNewest limit: Int) -> AsyncStream<HTTPLoaderEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HTTPLoaderEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.continuations[state.nextID] = continuation
            listeners.store(state.continuations.count, ordering: .releasing)
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.state.withLock { state in
                state.continuations.removeValue(forKey: id)
                self.listeners.store(state.continuations.count, ordering: .releasing)
            }
        }
        return stream
    }

    func yield(_ event: @autoclosure () -> HTTPLoaderEvent) {
        guard hasListeners else { return }
        let continuations = state.withLock { Array($0.continuations.values) }
        guard !continuations.isEmpty else { return }
        let event = event()
        for continuation in continuations { continuation.yield(event) }
    }

    func finishAll() {
        let continuations = state.withLock { state -> [AsyncStream<HTTPLoaderEvent>.Continuation] in
            defer {
                state.continuations = [:]
                listeners.store(0, ordering: .releasing)
            }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
