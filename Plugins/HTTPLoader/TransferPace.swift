/// The deadline and minimum-rate rules of one transfer, as a pure value: times come in as nanoseconds.
///
/// A transfer holds one of the loader's few download slots. A server that answers slowly on purpose — one byte
/// just before each idle timeout — would keep it forever, so every transfer has a total deadline and, after a
/// grace period, must receive at least ``HTTPTransferRate/bytes`` in every window of ``HTTPTransferRate/seconds``.
/// The shell (``TransferWatchdog``) calls ``check(now:totalBytes:)`` on a timer; this type only remembers
/// checkpoints and decides. Checkpoints are taken a quarter window apart, so a verdict compares the bytes of a
/// span between one and one and a quarter windows long: fewer bytes than the minimum over a span at least one
/// window long means the rate was below the minimum (never a false alarm), and a transfer that stays too slow is
/// caught within a quarter window after its first full window past the grace period.
struct TransferPace: Sendable, Equatable {
    enum Verdict: Sendable, Equatable {
        /// Keep going.
        case ok
        /// The total deadline passed.
        case deadlineExceeded(seconds: Double)
        /// Fewer than `bytes` arrived in the last `seconds` (or more) seconds.
        case tooSlow(bytes: Int, seconds: Double)
    }

    private struct Checkpoint: Sendable, Equatable {
        var time: UInt64
        var bytes: Int
    }

    let startedAt: UInt64
    /// Nanoseconds from `startedAt` to the deadline.
    let deadline: UInt64
    let rate: HTTPTransferRate?
    private let window: UInt64
    private let grace: UInt64
    private let checkpointInterval: UInt64
    /// Newest last; the oldest is dropped once a newer one is itself at least a window old. Empty until the first
    /// check, which starts it with the start (`startedAt`, no bytes): most transfers end before a watchdog tick,
    /// so they never allocate it.
    private var checkpoints: [Checkpoint] = []

    /// - Parameters:
    ///   - startedAt: When the request was sent (nanoseconds, any monotonic origin).
    ///   - timeout: The total deadline in seconds from `startedAt`.
    ///   - rate: The minimum rate, or nil for none.
    init(startedAt: UInt64, timeout: Double, rate: HTTPTransferRate?) {
        self.startedAt = startedAt
        deadline = Self.nanoseconds(timeout)
        self.rate = rate.flatMap { $0.bytes > 0 && $0.seconds > 0 && $0.seconds.isFinite ? $0 : nil }
        window = self.rate.map { Self.nanoseconds($0.seconds) } ?? .max
        grace = self.rate.map { $0.gracePeriod > 0 ? Self.nanoseconds($0.gracePeriod) : 0 } ?? 0
        checkpointInterval = max(1, window / 4)
    }

    /// False when neither a deadline nor a rate applies: the shell need not watch the transfer.
    var isWatched: Bool { deadline != .max || rate != nil }

    /// How often the shell should call ``check(now:totalBytes:)`` for this transfer, in nanoseconds.
    var checkInterval: UInt64 {
        let deadlineStep = deadline == .max ? UInt64.max : max(1, deadline / 8)
        return rate == nil ? deadlineStep : min(deadlineStep, checkpointInterval)
    }

    /// Judges the transfer at `now`, when `totalBytes` bytes arrived since it started (redirect bodies included).
    mutating func check(now: UInt64, totalBytes: Int) -> Verdict {
        guard now >= startedAt else { return .ok }
        let elapsed = now - startedAt
        if elapsed >= deadline { return .deadlineExceeded(seconds: Double(deadline) / 1e9) }
        guard let rate else { return .ok }
        if checkpoints.isEmpty { checkpoints.append(Checkpoint(time: startedAt, bytes: 0)) }
        if let last = checkpoints.last, now &- last.time >= checkpointInterval {
            checkpoints.append(Checkpoint(time: now, bytes: totalBytes))
        }
        // Keep exactly one checkpoint that is at least a window old: the newest such one.
        while checkpoints.count >= 2, now &- checkpoints[1].time >= window { checkpoints.removeFirst() }
        guard elapsed >= grace, let oldest = checkpoints.first, now &- oldest.time >= window else { return .ok }
        let received = totalBytes - oldest.bytes
        guard received < rate.bytes else { return .ok }
        return .tooSlow(bytes: received, seconds: Double(now &- oldest.time) / 1e9)
    }

    /// Seconds as nanoseconds; infinite, NaN, zero or negative mean "never" (`UInt64.max`).
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return .max }
        return seconds >= 1e9 ? UInt64(1e18) : max(1, UInt64(seconds * 1e9))
    }
}
