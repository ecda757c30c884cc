import Foundation

/// How many downloads may be ahead of the decoder: started (in flight, or finished with their bytes waiting for a
/// decode thread) and not yet decoded. A pure state machine; ``DownloadAdmission`` is its locked shell.
///
/// Why: a loader finishes a burst of downloads far faster than a few threads decode them, and every finished
/// download holds its bytes until its decode starts. Without a bound, 1,000 loads of 2 MP photos held all 1,000
/// bodies at once. Admitting a download only while fewer than ``limit`` are ahead keeps that memory bounded and
/// costs no throughput: when the network is the bottleneck nothing waits to be decoded and the bound is the
/// loader's own concurrency or more; when decoding is, more bytes on hand would not decode any sooner.
///
/// Waiting downloads start by priority (``ImageLoadPriority``: high, then normal, then low), and within a priority in
/// the order they asked; a waiting download whose priority changes keeps its place in that order. So a burst of
/// prefetches never holds back a user's load any longer than one place ahead takes to free up.
///
/// Invariants: `ahead ≤ limit` after every event except a lowered limit (then no start until it drops below);
/// every id in `waiting` is started once or withdrawn, never both; `finished` for an id not ahead changes nothing;
/// a download starts at once only when nothing waits.
struct DownloadAdmissionState<ID: Hashable & Sendable>: Sendable {
    /// A waiting download: its id and the order it asked in.
    private struct Waiting: Sendable {
        let id: ID
        let order: UInt64
    }

    /// The most downloads ahead of the decoder; at least 1.
    private(set) var limit: Int
    /// Downloads admitted and not yet finished (decode started, failed or cancelled).
    private(set) var ahead: Set<ID> = []
    /// Per priority (index: raw value), the downloads waiting for admission in the order they asked; `heads`
    /// marks the first still waiting.
    private var queues: [[Waiting]] = Array(repeating: [], count: ImageLoadPriority.allCases.count)
    private var heads: [Int] = Array(repeating: 0, count: ImageLoadPriority.allCases.count)
    /// The priority and order of each waiting download.
    private var waiting: [ID: (priority: ImageLoadPriority, order: UInt64)] = [:]
    private var nextOrder: UInt64 = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Number of downloads waiting for admission.
    var waitingCount: Int { waiting.count }

    /// A download asks to start at `priority`: true when it may start now, else it waits.
    mutating func request(_ id: ID, priority: ImageLoadPriority = .normal) -> Bool {
        if ahead.count < limit && waiting.isEmpty {
            ahead.insert(id)
            return true
        }
        let order = nextOrder
        nextOrder += 1
        waiting[id] = (priority, order)
        queues[priority.rawValue].append(Waiting(id: id, order: order))
        return false
    }

    /// A waiting download's priority changed; it keeps its place among the downloads that asked before and after
    /// it. Nothing happens for a download that is not waiting.
    mutating func reprioritize(_ id: ID, to priority: ImageLoadPriority) {
        guard let entry = waiting[id], entry.priority != priority else { return }
        remove(id, from: entry.priority)
        waiting[id] = (priority, entry.order)
        let queue = priority.rawValue
        // Binary search for the place by order among the entries still waiting.
        var low = heads[queue]
        var high = queues[queue].count
        while low < high {
            let middle = (low + high) / 2
            if queues[queue][middle].order < entry.order { low = middle + 1 } else { high = middle }
        }
        queues[queue].insert(Waiting(id: id, order: entry.order), at: low)
    }

    /// A download is no longer ahead of the decoder (its decode started, or it ended without one); returns the
    /// waiting downloads that may start now.
    mutating func finished(_ id: ID) -> [ID] {
        guard ahead.remove(id) != nil else { return [] }
        return admitWaiting()
    }

    /// A waiting download was cancelled before it started; true when it was still waiting.
    mutating func withdraw(_ id: ID) -> Bool {
        guard let entry = waiting.removeValue(forKey: id) else { return false }
        remove(id, from: entry.priority)
        return true
    }

    /// Changes the limit; returns the waiting downloads a higher limit lets start now.
    mutating func setLimit(_ newLimit: Int) -> [ID] {
        limit = max(1, newLimit)
        return admitWaiting()
    }

    private mutating func remove(_ id: ID, from priority: ImageLoadPriority) {
        let queue = priority.rawValue
        guard let index = queues[queue][heads[queue]...].firstIndex(where: { $0.id == id }) else { return }
        queues[queue].remove(at: index)
    }

    private mutating func admitWaiting() -> [ID] {
        var admitted: [ID] = []
        for queue in queues.indices.reversed() {
            while ahead.count < limit, heads[queue] < queues[queue].count {
                let id = queues[queue][heads[queue]].id
                heads[queue] += 1
                waiting[id] = nil
                ahead.insert(id)
                admitted.append(id)
            }
            // Drop the admitted prefix once it is most of the array, so the queue's memory follows what waits.
            if heads[queue] > 64 && heads[queue] * 2 > queues[queue].count {
                queues[queue].removeFirst(heads[queue])
                heads[queue] = 0
            }
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

    /// Returns the operation of a download that `start` begins once admitted (at once when it may start now);
    /// it waits at `priority` (the operation's ``AdmittedDownload/priority`` changes it later).
    /// `cancelledWhileWaiting` ends the fetch when the operation is cancelled before it started.
    ///
    /// A download that has to wait registers in `control` (the loader's cancel registry) under `url` while it
    /// waits, so the loader's cancels reach it before it ever starts.
    func admit(
        priority: ImageLoadPriority = .normal, control: DownloadControl? = nil, url: URL? = nil,
        _ start: @escaping @Sendable () -> (any ImageOperation)?,
        cancelledWhileWaiting: @escaping @Sendable () -> Void
    ) -> AdmittedDownload {
        let download = AdmittedDownload(
            admission: self, priority: priority, start: start, cancelledWhileWaiting: cancelledWhileWaiting)
        let now = state.withLock { state -> Bool in
            let now = state.machine.request(ObjectIdentifier(download), priority: priority)
            if !now { state.starts[ObjectIdentifier(download)] = download }
            return now
        }
        if now {
            download.begin()
        } else if let control, let url {
            download.registerWhileWaiting(
                control.register(url: url, stage: .waiting) { [weak download] in download?.cancel() })
        }
        return download
    }

    /// `download` is no longer ahead of the decoder; starts what that admits.
    fileprivate func finished(_ download: AdmittedDownload) {
        startAll(state.withLock { $0.admit($0.machine.finished(ObjectIdentifier(download))) })
    }

    /// `download`, if it still waits, waits at `priority` now.
    fileprivate func reprioritize(_ download: AdmittedDownload, to priority: ImageLoadPriority) {
        state.withLock { $0.machine.reprioritize(ObjectIdentifier(download), to: priority) }
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
        /// The loader's cancel registry entry while the download waits; ended when it starts or ends.
        var waitingRegistration: DownloadControl.Registration?
        /// A registration that arrived after the download already left the queue: dropped at once.
        var leftQueue = false
        // Dropped once used: they hold the fetch job, which holds this operation.
        var start: (@Sendable () -> (any ImageOperation)?)?
        var cancelledWhileWaiting: (@Sendable () -> Void)?
    }

    private let admission: DownloadAdmission
    private let state: Locked<State>

    fileprivate init(
        admission: DownloadAdmission, priority: ImageLoadPriority,
        start: @escaping @Sendable () -> (any ImageOperation)?, cancelledWhileWaiting: @escaping @Sendable () -> Void
    ) {
        self.admission = admission
        state = Locked(State(priority: priority, start: start, cancelledWhileWaiting: cancelledWhileWaiting))
    }

    var isCancelled: Bool {
        state.withLock { if case .cancelled = $0.phase { true } else { false } }
    }

    var priority: ImageLoadPriority {
        get { state.withLock { $0.priority } }
        set {
            let (running, waiting) = state.withLock { state -> ((any PrioritizableOperation)?, Bool) in
                state.priority = newValue
                switch state.phase {
                case .running(let operation): return (operation as? any PrioritizableOperation, false)
                case .waiting: return (nil, true)
                case .starting, .cancelled: return (nil, false)
                }
            }
            // Racing its admission, the change reaches either the queue or (through `begin`) the loader.
            if waiting { admission.reprioritize(self, to: newValue) }
            running?.priority = newValue
        }
    }

    /// Keeps the cancel-registry entry of a waiting download until it leaves the queue.
    fileprivate func registerWhileWaiting(_ registration: DownloadControl.Registration) {
        let late = state.withLock { state -> Bool in
            if state.leftQueue { return true }
            state.waitingRegistration = registration
            return false
        }
        if late { registration.unregister() }
    }

    /// The download left the queue (started, withdrawn or cancelled): its waiting entry ends.
    private func leaveQueue() {
        let registration = state.withLock { state -> DownloadControl.Registration? in
            state.leftQueue = true
            defer { state.waitingRegistration = nil }
            return state.waitingRegistration
        }
        registration?.unregister()
    }

    /// Admitted: starts the download, unless it was cancelled meanwhile.
    fileprivate func begin() {
        leaveQueue()
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
        } else if let prioritizable = operation as? any PrioritizableOperation {
            // The loader was asked at the priority of the load's options; whatever the priority became while it
            // waited (raised, lowered, or set back to normal) reaches the loader now.
            prioritizable.priority = priority
        }
    }

    /// The download no longer holds a place ahead of the decoder (its decode started, or its fetch ended).
    /// Idempotent.
    func release() {
        leaveQueue()
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
        leaveQueue()
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
