/// How many downloads may be ahead of the decoder: started (in flight, or finished with their bytes waiting for a
/// decode thread) and not yet decoded. A pure state machine; ``DownloadAdmission`` is its locked shell.
///
/// Why: a loader finishes a burst of downloads far faster than a few threads decode them, and every finished
/// download holds its bytes until its decode starts. Without a bound, 1,000 loads of 2 MP photos held all 1,000
/// bodies at once. Admitting a download only while fewer than ``limit`` are ahead keeps that memory bounded and
/// costs no throughput: when the network is the bottleneck nothing waits to be decoded and the bound is the
/// loader's own concurrency or more; when decoding is, more bytes on hand would not decode any sooner.
///
/// Invariants: `ahead ≤ limit` after every event except a lowered limit (then no start until it drops below);
/// every id in `waiting` is started once or cancelled, never both; `finished` for an id not ahead changes nothing.
struct DownloadAdmissionState<ID: Hashable & Sendable>: Sendable {
    /// The most downloads ahead of the decoder; at least 1.
    private(set) var limit: Int
    /// Downloads admitted and not yet finished (decode started, failed or cancelled).
    private(set) var ahead: Set<ID> = []
    /// Downloads waiting for admission, first come first served.
    private(set) var waiting: [ID] = []
    private var head = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Number of downloads waiting for admission.
    var waitingCount: Int { waiting.count - head }

    /// A download asks to start: true when it may start now, else it waits.
    mutating func request(_ id: ID) -> Bool {
        if ahead.count < limit && waitingCount == 0 {
            ahead.insert(id)
            return true
        }
        waiting.append(id)
        return false
    }

    /// A download is no longer ahead of the decoder (its decode started, or it ended without one); returns the
    /// waiting downloads that may start now.
    mutating func finished(_ id: ID) -> [ID] {
        guard ahead.remove(id) != nil else { return [] }
        return admitWaiting()
    }

    /// A waiting download was cancelled before it started; true when it was still waiting.
    mutating func withdraw(_ id: ID) -> Bool {
        guard let index = waiting[head...].firstIndex(of: id) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// Changes the limit; returns the waiting downloads a higher limit lets start now.
    mutating func setLimit(_ newLimit: Int) -> [ID] {
        limit = max(1, newLimit)
        return admitWaiting()
    }

    private mutating func admitWaiting() -> [ID] {
        var admitted: [ID] = []
        while ahead.count < limit, head < waiting.count {
            let id = waiting[head]
            head += 1
            ahead.insert(id)
            admitted.append(id)
        }
        if head > 64 && head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        return admitted
    }
}

/// The locked shell of ``DownloadAdmissionState``: starts admitted downloads outside its lock. Thread-safe.
final class DownloadAdmission: Sendable {
    private struct State {
        var machine: DownloadAdmissionState<ObjectIdentifier>
        var starts: [ObjectIdentifier: AdmittedDownload] = [:]

        /// The waiting downloads of `ids`, no longer waiting.
        mutating func admit(_ ids: [ObjectIdentifier]) -> [AdmittedDownload] {
            ids.compactMap { starts.removeValue(forKey: $0) }
        }
    }

    private let state: Locked<State>

    init(limit: Int) { state = Locked(State(machine: DownloadAdmissionState(limit: limit))) }

    /// The most downloads ahead of the decoder.
    var limit: Int {
        get { state.withLock { $0.machine.limit } }
        set { startAll(state.withLock { $0.admit($0.machine.setLimit(newValue)) }) }
    }

    /// Downloads waiting for admission.
    var waitingCount: Int { state.withLock { $0.machine.waitingCount } }

    /// Downloads admitted and not yet decoded.
    var aheadCount: Int { state.withLock { $0.machine.ahead.count } }

    /// Returns the operation of a download that `start` begins once admitted (at once when it may start now).
    /// `cancelledWhileWaiting` ends the fetch when the operation is cancelled before it started.
    func admit(
        _ start: @escaping @Sendable () -> (any ImageOperation)?,
        cancelledWhileWaiting: @escaping @Sendable () -> Void
    ) -> AdmittedDownload {
        let download = AdmittedDownload(admission: self, start: start, cancelledWhileWaiting: cancelledWhileWaiting)
        let now = state.withLock { state -> Bool in
            let now = state.machine.request(ObjectIdentifier(download))
            if !now { state.starts[ObjectIdentifier(download)] = download }
            return now
        }
        if now { download.begin() }
        return download
    }

    /// `download` is no longer ahead of the decoder; starts what that admits.
    fileprivate func finished(_ download: AdmittedDownload) {
        startAll(state.withLock { $0.admit($0.machine.finished(ObjectIdentifier(download))) })
    }

    /// `download` was cancelled while waiting; true when it was still waiting (it never starts then).
    fileprivate func withdraw(_ download: AdmittedDownload) -> Bool {
        state.withLock { state in
            guard state.machine.withdraw(ObjectIdentifier(download)) else { return false }
            state.starts[ObjectIdentifier(download)] = nil
            return true
        }
    }

    private func startAll(_ downloads: [AdmittedDownload]) {
        for download in downloads { download.begin() }
    }
}

/// A download behind ``DownloadAdmission``: the source operation of its fetch job from the moment it was asked
/// for, so cancels and priorities reach it while it waits, and the real loader operation once it started.
final class AdmittedDownload: PrioritizableOperation {
    private enum Phase {
        case waiting
        case starting
        case running((any ImageOperation)?)
        case cancelled
    }

    private struct State {
        var phase = Phase.waiting
        var priority = ImageLoadPriority.normal
        var released = false
        // Dropped once used: they hold the fetch job, which holds this operation.
        var start: (@Sendable () -> (any ImageOperation)?)?
        var cancelledWhileWaiting: (@Sendable () -> Void)?
    }

    private let admission: DownloadAdmission
    private let state: Locked<State>

    fileprivate init(
        admission: DownloadAdmission, start: @escaping @Sendable () -> (any ImageOperation)?,
        cancelledWhileWaiting: @escaping @Sendable () -> Void
    ) {
        self.admission = admission
        state = Locked(State(start: start, cancelledWhileWaiting: cancelledWhileWaiting))
    }

    var isCancelled: Bool {
        state.withLock { if case .cancelled = $0.phase { true } else { false } }
    }

    var priority: ImageLoadPriority {
        get { state.withLock { $0.priority } }
        set {
            let running = state.withLock { state -> (any PrioritizableOperation)? in
                state.priority = newValue
                if case .running(let operation) = state.phase { return operation as? any PrioritizableOperation }
                return nil
            }
            running?.priority = newValue
        }
    }

    /// Admitted: starts the download, unless it was cancelled meanwhile.
    fileprivate func begin() {
        let start = state.withLock { state -> (@Sendable () -> (any ImageOperation)?)? in
            guard case .waiting = state.phase else { return nil }
            state.phase = .starting
            defer {
                state.start = nil
                state.cancelledWhileWaiting = nil
            }
            return state.start
        }
        guard let start else { return }
        let operation = start()
        let (cancel, priority) = state.withLock { state -> (Bool, ImageLoadPriority) in
            if case .cancelled = state.phase { return (true, state.priority) }
            state.phase = .running(operation)
            return (false, state.priority)
        }
        if cancel {
            // The loader ends the fetch with its cancelled completion.
            operation?.cancel()
        } else if priority != .normal, let prioritizable = operation as? any PrioritizableOperation {
            prioritizable.priority = priority
        }
    }

    /// The download no longer holds a place ahead of the decoder (its decode started, or its fetch ended).
    /// Idempotent.
    func release() {
        let (first, waiting) = state.withLock { state -> (Bool, Bool) in
            defer { state.released = true }
            let waiting = if case .waiting = state.phase { true } else { false }
            if waiting {
                // Its fetch ended before it started: it must not start later (and hold a place nobody gives back).
                state.phase = .cancelled
                state.start = nil
                state.cancelledWhileWaiting = nil
            }
            return (!state.released, waiting)
        }
        guard first else { return }
        // Still queued: leave the queue. Admitted (or running): give the place back.
        if waiting && admission.withdraw(self) { return }
        admission.finished(self)
    }

    func cancel() {
        let (previous, cancelledWhileWaiting) = state.withLock { state -> (Phase, (@Sendable () -> Void)?) in
            defer {
                state.phase = .cancelled
                state.start = nil
                state.cancelledWhileWaiting = nil
            }
            return (state.phase, state.cancelledWhileWaiting)
        }
        switch previous {
        case .waiting:
            // Never started (still queued, or admitted and `begin` not yet run: it will see the cancel): no
            // loader will complete this fetch, so end it here.
            if !admission.withdraw(self) { release() }
            state.withLock { $0.released = true }
            cancelledWhileWaiting?()
        case .starting: break  // `begin` cancels what it started once `start` returns.
        case .running(let operation): operation?.cancel()
        case .cancelled: break
        }
    }
}
