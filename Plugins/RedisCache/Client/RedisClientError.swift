/// Why a Redis command did not get a usable answer.
///
/// The cache level never shows these to its callers (it degrades to a miss); they reach logs and metrics, and
/// decide whether the circuit breaker counts a failure (``isUnavailability``).
struct RedisClientError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Kind: String, Sendable, Hashable {
        /// TCP, unix-socket or TLS connection could not be made.
        case connectFailed
        /// The connection closed with commands in flight.
        case connectionClosed
        /// No answer within the command (or connect) timeout.
        case timedOut
        /// The server answered with an error reply (``message`` has it).
        case server
        /// The peer sent bytes that are not RESP, or a reply nobody asked for.
        case protocolViolation
        /// AUTH / HELLO AUTH or SELECT was refused.
        case handshakeFailed
        /// The client is backing off after failed connects, or was shut down.
        case unavailable
        /// Cluster redirections went round in circles or the slot map has no node for a slot.
        case cluster
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String = "") {
        self.kind = kind
        self.message = message
    }

    var description: String { message.isEmpty ? "redis \(kind.rawValue)" : "redis \(kind.rawValue): \(message)" }

    /// The first word of a server error (`OOM`, `READONLY`, `MOVED` …), uppercased.
    var serverErrorCode: String? {
        guard kind == .server else { return nil }
        return message.split(separator: " ", maxSplits: 1).first.map { $0.uppercased() }
    }

    /// True when the server (or the way to it) is unusable now, as opposed to refusing this one command: the
    /// circuit breaker counts these. Covers transport failures, timeouts, and the server errors that say
    /// "not now": out of memory, read-only replica, loading, master down, busy script, cluster down.
    var isUnavailability: Bool {
        switch kind {
        case .connectFailed, .connectionClosed, .timedOut, .protocolViolation, .unavailable, .handshakeFailed,
            .cluster:
            return true
        case .server:
            return ["OOM", "READONLY", "LOADING", "MASTERDOWN", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "NOAUTH"]
                .contains(serverErrorCode ?? "")
        }
    }
}
