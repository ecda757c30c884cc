import Foundation
import ImageCore
import NIOCore
import Synchronization

/// The loader's bookkeeping: which transfer serves which request, the admission queue, the watchdog.
///
/// Lock order: the loader's `state`, then a transfer's `inner` (joining and repricing nest them); a transfer
/// never takes the loader's lock while it holds its own.
extension HTTPLoader {
    private enum Admission {
        case joined(Transfer, callers: Int, drain: [Transfer.Delivery]?)
        case created(Transfer, startNow: Bool)
        case shutDown
    }

    func enqueue(
        _ request: TransferRequest, subscriber: TransferStateMachine.Subscriber, caller: Transfer.Caller
    ) -> any ImageOperation {
        let admission = state.withLock { state -> Admission in
            guard !state.isShutdown else { return .shutDown }
            if let existing = state.transfers[request.key],
                let (callers, drain) = existing.join(subscriber, caller: caller)
            {
                if state.queued[existing.id] != nil { state.queue.setPriority(existing.id, to: existing.priority) }
                return .joined(existing, callers: callers, drain: drain)
            }
            let transfer = Transfer(id: subscriber.id, request: request, loader: self)
            _ = transfer.join(subscriber, caller: caller)
            state.transfers[request.key] = transfer
            let startNow = state.queue.enqueue(transfer.id, priority: subscriber.priority)
            if startNow { state.running[transfer.id] = transfer } else { state.queued[transfer.id] = transfer }
            return .created(transfer, startNow: startNow)
        }
        let transfer: Transfer
        switch admission {
        case .shutDown:
            return failEarly(.cancelled(stage: .download), caller.completion)
        case .joined(let existing, let callers, let drain):
            transfer = existing
            metrics.coalescedJoins.increment()
            events.yield(HTTPLoaderEvent(transferID: existing.id, url: existing.url, kind: .joined(callers: callers)))
            if let drain { existing.drainLater(drain) }
        case .created(let created, let startNow):
            transfer = created
            if startNow { created.start() }
        }
        return TransferOperation(transfer: transfer, subscriber: subscriber.id, priority: subscriber.priority)
    }

    /// A transfer ended or gave its slot back: new callers must not join it; `leavesQueue` takes it out of the
    /// queue (if it is no longer there, it was just granted a slot and `start()` gives the slot back);
    /// `releasesSlot` starts the next queued transfer in its slot.
    func transferDone(_ transfer: Transfer, leavesQueue: Bool, releasesSlot: Bool) {
        let next = state.withLock { state -> Transfer? in
            // One lookup: the key's hash is cached, but its fields are still compared on every lookup.
            if let index = state.transfers.index(forKey: transfer.request.key),
                state.transfers.values[index] === transfer
            {
                state.transfers.remove(at: index)
            }
            if leavesQueue, state.queue.remove(transfer.id) { state.queued[transfer.id] = nil }
            guard releasesSlot else { return nil }
            state.running[transfer.id] = nil
            guard !state.isShutdown, let nextID = state.queue.finish(),
                let next = state.queued.removeValue(forKey: nextID)
            else {
                return nil
            }
            state.running[nextID] = next
            return next
        }
        next?.start()
    }

    /// Puts a queued transfer at its callers' current highest priority.
    func syncQueuePriority(_ transfer: Transfer) {
        state.withLock { state in
            guard state.queued[transfer.id] === transfer else { return }
            state.queue.setPriority(transfer.id, to: transfer.priority)
        }
    }

    /// Caller `subscriber` of `transfer` asks for `priority`: the transfer runs at its callers' highest, and a
    /// queued one moves in the queue. Reported as an event when the transfer's priority changed.
    func setPriority(_ priority: DownloadPriority, of subscriber: UInt64, in transfer: Transfer) {
        let changed = state.withLock { state -> Bool in
            guard transfer.setPriority(priority, of: subscriber) else { return false }
            if state.queued[transfer.id] === transfer { state.queue.setPriority(transfer.id, to: transfer.priority) }
            return true
        }
        guard changed else { return }
        events.yield(
            HTTPLoaderEvent(transferID: transfer.id, url: transfer.url, kind: .priorityChanged(transfer.priority)))
    }

    /// An attempt of `transfer` was sent.
    func recordStart(of transfer: Transfer, attempt: Int) {
        metrics.requests.increment()
        events.yield(HTTPLoaderEvent(transferID: transfer.id, url: transfer.url, kind: .started(attempt: attempt)))
        if logger.logLevel <= .debug {
            logger.debug(
                "HTTP transfer started",
                metadata: [
                    "transfer": "\(transfer.id)", "url": "\(transfer.url.absoluteString)", "attempt": "\(attempt)",
                ])
        }
    }

    /// A failed attempt of `transfer` will be retried.
    func recordRetry(of transfer: Transfer, attempt: Int, delay: Double, error: ImageError) {
        events.yield(
            HTTPLoaderEvent(
                transferID: transfer.id, url: transfer.url,
                kind: .retrying(attempt: attempt, delay: delay, error: error)))
        logger.debug(
            "HTTP transfer retrying",
            metadata: ["transfer": "\(transfer.id)", "url": "\(transfer.url.absoluteString)", "error": "\(error.code)"])
    }

    // MARK: Watchdog

    /// Makes sure the watchdog fires within `interval` nanoseconds of `now` (a transfer started that needs
    /// watching; its start time, so the clock is read once per start).
    func watch(within interval: UInt64, now: UInt64 = NIODeadline.now().uptimeNanoseconds) {
        let step = max(interval, 1_000_000)  // at most a thousand ticks a second
        guard step < UInt64.max - now else { return }
        let target = now + step
        watchdog.withLock { watchdog in
            if let fireAt = watchdog.fireAt, fireAt <= target { return }
            watchdog.scheduled?.cancel()
            watchdog.fireAt = target
            watchdog.scheduled = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(target)) { [weak self] in
                self?.watchdogFired()
            }
        }
    }

    /// Checks every running transfer's deadline and rate, then sleeps until the soonest next check.
    private func watchdogFired() {
        // Cleared first: a transfer that starts from now on schedules its own tick.
        watchdog.withLock { $0 = Watchdog() }
        let running = state.withLock { Array($0.running.values) }
        let now = NIODeadline.now().uptimeNanoseconds
        var next = UInt64.max
        for transfer in running {
            if let interval = transfer.enforcePace(now: now) { next = min(next, interval) }
        }
        if next != .max { watch(within: next) }
    }
}

/// The handle `requestImage` returns: cancels its caller's share of a transfer, or changes its priority.
final class TransferOperation: PrioritizableOperation {
    private let transfer: Transfer
    private let subscriber: UInt64
    private let cancelled = Atomic<Bool>(false)
    private let requested: Atomic<Int>

    init(transfer: Transfer, subscriber: UInt64, priority: DownloadPriority) {
        self.transfer = transfer
        self.subscriber = subscriber
        requested = Atomic(priority.rawValue)
    }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        transfer.leave(subscriber)
    }

    /// The priority this caller asked for; the transfer runs at the highest of its callers'.
    var priority: ImageLoadPriority {
        get { DownloadPriority(rawValue: requested.load(ordering: .relaxed))?.loadPriority ?? .normal }
        set {
            let priority = DownloadPriority(newValue)
            requested.store(priority.rawValue, ordering: .relaxed)
            transfer.loader.setPriority(priority, of: subscriber, in: transfer)
        }
    }
}
