import ImageCore

/// The order in which queued downloads of the same priority start.
public enum DownloadExecutionOrder: Sendable, Hashable {
    /// First queued, first started (SDWebImage's default).
    case fifo
    /// Last queued, first started: what a scrolling UI or a crawler following fresh links wants.
    case lifo
}

/// The priority of one transfer in the loader's queue, from ``/ImageCore/ImageOptions/highPriority`` /
/// ``/ImageCore/ImageOptions/lowPriority``, or set later on the load's operation
/// (``/ImageCore/PrioritizableOperation``).
public enum DownloadPriority: Int, Sendable, Hashable, Comparable {
    /// Started only when no normal or high download waits.
    case low = 0
    /// The default.
    case normal = 1
    /// Started before every queued normal and low download.
    case high = 2

    /// Orders low < normal < high.
    public static func < (lhs: DownloadPriority, rhs: DownloadPriority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The queue priority of a load's ``/ImageCore/ImageLoadPriority``.
    public init(_ priority: ImageLoadPriority) {
        switch priority {
        case .low: self = .low
        case .normal: self = .normal
        case .high: self = .high
        }
    }

    /// This priority as ImageCore's ``/ImageCore/ImageLoadPriority``.
    public var loadPriority: ImageLoadPriority {
        switch self {
        case .low: .low
        case .normal: .normal
        case .high: .high
        }
    }
}

/// The loader's admission queue in front of AsyncHTTPClient: a pure value (no I/O, no locks).
///
/// At most `maxConcurrent` items run; the others wait per priority. Within a priority the ``DownloadExecutionOrder``
/// decides. The owner keeps it behind a lock and starts whatever ``enqueue(_:priority:)`` and ``finish()`` return.
struct DownloadQueue<ID: Hashable & Sendable>: Sendable {
    let maxConcurrent: Int
    let order: DownloadExecutionOrder
    private(set) var running = 0
    // Indexed by priority raw value; arrays stay small enough (thousands) that O(n) removal on cancel is fine.
    private var pending: [[ID]] = [[], [], []]
    private var heads = [0, 0, 0]

    init(maxConcurrent: Int, order: DownloadExecutionOrder) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.order = order
    }

    /// Number of queued items.
    var pendingCount: Int { (0..<3).reduce(0) { $0 + pending[$1].count - heads[$1] } }

    /// Queues `id`; returns true when it may start now (a slot was taken for it).
    mutating func enqueue(_ id: ID, priority: DownloadPriority) -> Bool {
        if running < maxConcurrent && pendingCount == 0 {
            running += 1
            return true
        }
        pending[priority.rawValue].append(id)
        return false
    }

    /// Removes a queued `id`; false when it is not queued (already started or unknown).
    mutating func remove(_ id: ID) -> Bool {
        for level in 0..<3 {
            if let index = pending[level][heads[level]...].firstIndex(of: id) {
                pending[level].remove(at: index)
                return true
            }
        }
        return false
    }

    /// Moves a queued `id` up to `priority` (a high-priority caller joined a queued low-priority transfer).
    mutating func raise(_ id: ID, to priority: DownloadPriority) {
        for level in 0..<priority.rawValue {
            if let index = pending[level][heads[level]...].firstIndex(of: id) {
                pending[level].remove(at: index)
                pending[priority.rawValue].append(id)
                return
            }
        }
    }

    /// Moves a queued `id` to `priority`, up or down, behind the items already waiting there (FIFO) or ahead of
    /// them (LIFO), as if it had been queued now. Returns false when `id` is not queued (running or unknown).
    @discardableResult
    mutating func setPriority(_ id: ID, to priority: DownloadPriority) -> Bool {
        for level in 0..<3 {
            guard let index = pending[level][heads[level]...].firstIndex(of: id) else { continue }
            guard level != priority.rawValue else { return true }
            pending[level].remove(at: index)
            pending[priority.rawValue].append(id)
            return true
        }
        return false
    }

    /// A running item ended: returns the next item to start in its slot, or nil (the slot is freed).
    mutating func finish() -> ID? {
        if let next = popNext() { return next }
        running = max(0, running - 1)
        return nil
    }

    private mutating func popNext() -> ID? {
        for level in stride(from: 2, through: 0, by: -1) where pending[level].count > heads[level] {
            switch order {
            case .lifo:
                return pending[level].removeLast()
            case .fifo:
                let id = pending[level][heads[level]]
                heads[level] += 1
                // Compact now and then so a long-lived loader does not keep every started ID.
                if heads[level] > 64 && heads[level] * 2 > pending[level].count {
                    pending[level].removeFirst(heads[level])
                    heads[level] = 0
                }
                return id
            }
        }
        return nil
    }
}
