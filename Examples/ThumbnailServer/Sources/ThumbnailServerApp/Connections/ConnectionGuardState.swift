/// The limits the server puts on one connection, whatever its client does.
public struct ConnectionLimits: Sendable, Equatable {
    /// Seconds a connection may wait for the first byte of its next request (opened, or its last answer written).
    public var idleTimeout: Double
    /// Seconds a request may take to arrive whole (head and body) from its first byte.
    public var headerTimeout: Double
    /// Seconds an answer may wait for the client to read before the connection is closed (no write progress).
    public var writeTimeout: Double
    /// Connections at once; beyond it the oldest idle or half-sent one is closed (else the new one).
    public var maxConnections: Int
    /// Requests a connection may have read and not yet answered (HTTP/1.1 pipelining); a connection with more is
    /// closed: each would make an answer the server holds until its client reads, and a client that pipelines
    /// deeply without reading is an attack (browsers don't pipeline).
    public var maxPipelined: Int
    /// The kernel's send buffer per connection (`SO_SNDBUF`), in bytes; nil leaves it to the kernel's autotuning.
    ///
    /// What a client that doesn't read makes the server copy before its connection stalls: with autotuning, Linux
    /// takes up to `net.ipv4.tcp_wmem`'s maximum (4 MiB) of each answer into the socket, so 150 such clients asking
    /// for a 2.4 MB thumbnail had the server copy every byte of every answer, and `/health` waited up to 0.5 s
    /// behind the copying (release build). A bound stops each at this much. It also bounds one connection's rate to
    /// about this many bytes per round trip (256 KiB at 100 ms: 2.5 MB/s), ample for thumbnails; raise it for large
    /// outputs to distant clients. Linux doubles the figure for its own bookkeeping.
    public var sendBufferBytes: Int?
    /// Connections the kernel may complete and hold for the server to accept (`listen`'s backlog); Linux caps it at
    /// `net.core.somaxconn` (4096 since 5.4).
    ///
    /// Past it the kernel drops new SYNs and the client retries a second later. Hummingbird's 256 was filled by a
    /// burst of 1,200 connects while the accept loop shared two busy cores: `/health` took 1.0 s (one SYN retry)
    /// though the server was idle a moment later. A connection waiting here costs the kernel a socket, not the
    /// server: ``maxConnections`` still bounds what is accepted.
    public var listenBacklog: Int

    /// Creates limits.
    public init(
        idleTimeout: Double = 60, headerTimeout: Double = 10, writeTimeout: Double = 30, maxConnections: Int = 10_000,
        maxPipelined: Int = 4, sendBufferBytes: Int? = 256 << 10, listenBacklog: Int = 4096
    ) {
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.maxPipelined = maxPipelined
        self.sendBufferBytes = sendBufferBytes
        self.listenBacklog = listenBacklog
    }
}

/// What one connection is doing, as a pure state machine over the events its handlers see: bytes read, a request's
/// head and end decoded, an answer's end written, writes completing, the socket's writability. ``verdict(now:)``
/// says whether a limit was passed. No I/O, no clock: times come in with the events. Value type.
struct ConnectionGuardState: Equatable {
    /// Where the connection is.
    enum Phase: UInt8, Equatable, Sendable {
        /// Waiting for the first byte of a request.
        case idle
        /// Bytes of a request arrived, its head and body not yet whole.
        case reading
        /// Every request read is being answered.
        case answering
    }

    /// Why a connection is closed.
    enum Verdict: Equatable {
        case keep
        case close(String)
    }

    let limits: ConnectionLimits
    private(set) var phase: Phase = .idle
    /// When the current phase began (idle) or the request's first byte arrived (reading).
    private(set) var since: Double
    /// Requests whose head was read and whose answer has not ended.
    private(set) var answering = 0
    /// Whether a request's head was read and its end not yet.
    private(set) var inBody = false
    /// Whether the socket takes writes; while it doesn't, the connection is not read (its answers are not read,
    /// so no further request of it is taken in).
    private(set) var isWritable = true
    /// When a write last completed, or the socket last became writable.
    private(set) var lastWriteProgress: Double

    init(limits: ConnectionLimits, now: Double) {
        self.limits = limits
        since = now
        lastWriteProgress = now
    }

    /// Bytes arrived.
    mutating func bytesRead(now: Double) {
        if phase == .idle {
            phase = .reading
            since = now
        }
    }

    /// A request's head was decoded.
    mutating func headRead(now: Double) {
        if phase == .idle { since = now }
        answering += 1
        inBody = true
        if phase != .answering { phase = .reading }
    }

    /// A request's end was decoded: it is whole.
    mutating func endRead(now: Double) {
        inBody = false
        phase = .answering
    }

    /// An answer's end was written.
    mutating func answerEnded(now: Double) {
        answering = max(0, answering - 1)
        if answering == 0 && !inBody {
            phase = .idle
            since = now
        }
    }

    /// A write completed (the socket took its bytes).
    mutating func writeCompleted(now: Double) { lastWriteProgress = now }

    /// The socket's writability changed.
    mutating func writabilityChanged(_ writable: Bool, now: Double) {
        if writable && !isWritable { lastWriteProgress = now }
        isWritable = writable
    }

    /// Whether a limit was passed at `now`.
    func verdict(now: Double) -> Verdict {
        if !isWritable && now - lastWriteProgress > limits.writeTimeout {
            return .close("write timeout: the client has not read its answer for \(limits.writeTimeout) s")
        }
        switch phase {
        case .idle where now - since > limits.idleTimeout:
            return .close("idle timeout")
        case .reading where now - since > limits.headerTimeout:
            return .close("header timeout: the request did not arrive whole within \(limits.headerTimeout) s")
        default:
            return .keep
        }
    }

    /// When ``verdict(now:)`` may next say close: the end of the idle or header time, or of the write time while
    /// the socket is full; nil while every request read is being answered and the socket takes writes.
    var nextDeadline: Double? {
        let write: Double? = isWritable ? nil : lastWriteProgress + limits.writeTimeout
        let read: Double?
        switch phase {
        case .idle: read = since + limits.idleTimeout
        case .reading: read = since + limits.headerTimeout
        case .answering: read = nil
        }
        guard let write else { return read }
        guard let read else { return write }
        return min(write, read)
    }

    /// Whether more requests were read than ``ConnectionLimits/maxPipelined`` allows unanswered.
    var isOverPipelined: Bool { answering > max(1, limits.maxPipelined) }

    /// Whether the connection may be closed to make room for a new one: it waits for, or is half-way through
    /// receiving, a request, and owes no answer.
    var isEvictable: Bool { phase != .answering && answering == 0 }
}
