import Synchronization

/// The bytes of answers being written at once, across every connection, bounded.
///
/// A connection whose client doesn't read holds the answer it was writing until the write timeout closes it, so
/// 150 such clients asking for a 2 MB thumbnail would hold 300 MB. Each answer reserves its size here before its
/// body is written and gives it back when the write ends (sent, failed or closed); an answer that would take the
/// total past the budget is not written (its connection is closed), so answers in flight never hold more than the
/// budget. Good clients read as fast as the answers are written, so their reservations last milliseconds.
/// Thread-safe: one `Mutex`.
public final class OutputBudget: Sendable {
    /// An answer the budget could not take: its connection is closed.
    struct Exhausted: Error {}

    private let reserved = Mutex(0)
    private let refusals = Mutex(0)
    /// The budget in bytes.
    public let limit: Int

    /// Creates a budget of `limit` bytes.
    public init(limit: Int) { self.limit = max(1, limit) }

    /// Bytes reserved now.
    public var inUse: Int { reserved.withLock { $0 } }

    /// Answers refused so far.
    public var refused: Int { refusals.withLock { $0 } }

    /// Reserves `bytes`; false when the budget can't take them (an answer larger than the whole budget is taken
    /// when nothing else is in flight, so it can still be served).
    func reserve(_ bytes: Int) -> Bool {
        let taken = reserved.withLock { reserved -> Bool in
            guard reserved == 0 || reserved + bytes <= limit else { return false }
            reserved += bytes
            return true
        }
        if !taken { refusals.withLock { $0 += 1 } }
        return taken
    }

    func release(_ bytes: Int) { reserved.withLock { $0 -= bytes } }
}
