/// Exponential back-off with jitter: the delay before reconnect attempt `n`, or before the circuit breaker's
/// next probe. Pure; the random jitter is injected so tests can pin it.
struct Backoff: Sendable, Hashable {
    /// Delay after the first failure, seconds.
    var base: Double
    /// Upper bound of a delay, seconds.
    var maximum: Double
    /// ± fraction of randomness (0.2 → 80 %…120 %), so a fleet does not retry in lock-step.
    var jitter: Double = 0.2

    /// The delay after `failures` consecutive failures (1 = the first), jitter drawn from `unit` in 0...1.
    func delay(afterFailures failures: Int, unit: Double) -> Double {
        guard failures > 0 else { return 0 }
        let exponent = Double(min(failures - 1, 30))
        let raw = min(maximum, base * pow2(exponent))
        return raw * (1 - jitter + 2 * jitter * min(max(unit, 0), 1))
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }
}

/// Which connection a command should use, when to open another, and when to stop trying: the pool's rules as
/// a pure value. Connections are known by ids; their loads (commands in flight) are passed in, because they
/// change on the event loops without telling the pool.
///
/// - A command uses the least-loaded open connection (pipelining keeps one connection busy cheaply); a second
///   connection opens, in the background, only when every open one is busy and there is room under `capacity`.
/// - With no open connection, the first command starts a connect and every command waits for it; at most one
///   connect runs at a time.
/// - After a failed connect no new attempt starts before the back-off delay has passed; commands meanwhile fail
///   fast with `unavailable` instead of each paying a connect timeout.
struct ConnectionPoolState: Sendable {
    typealias ConnectionID = Int

    enum LeaseAction: Equatable, Sendable {
        /// Send on this connection now.
        case use(ConnectionID)
        /// Send on this connection now, and open another in the background.
        case useAndConnect(ConnectionID)
        /// Wait for the connect just started (the caller starts it).
        case connectAndWait
        /// Wait for the connect already running.
        case wait
        /// Fail at once: backing off after failed connects, or shut down.
        case reject(RedisClientError)
    }

    let capacity: Int
    let backoff: Backoff
    private(set) var open: [ConnectionID] = []
    private(set) var connecting = false
    private(set) var consecutiveFailures = 0
    private(set) var retryAt: Double = 0
    private(set) var isShutdown = false

    init(capacity: Int, backoff: Backoff) {
        self.capacity = max(1, capacity)
        self.backoff = backoff
    }

    /// Chooses for one command; `load(id)` is the number of commands in flight on an open connection.
    mutating func lease(now: Double, load: (ConnectionID) -> Int) -> LeaseAction {
        guard !isShutdown else { return .reject(RedisClientError(.unavailable, "client shut down")) }
        if let best = open.min(by: { load($0) < load($1) }) {
            if load(best) > 0, open.count < capacity, !connecting, now >= retryAt {
                connecting = true
                return .useAndConnect(best)
            }
            return .use(best)
        }
        if connecting { return .wait }
        guard now >= retryAt else {
            return .reject(RedisClientError(.unavailable, "reconnecting after \(consecutiveFailures) failure(s)"))
        }
        connecting = true
        return .connectAndWait
    }

    /// The running connect succeeded.
    mutating func connected(_ id: ConnectionID) {
        connecting = false
        consecutiveFailures = 0
        retryAt = 0
        if !isShutdown { open.append(id) }
    }

    /// The running connect failed; `unit` draws the jitter. Returns the back-off delay now in force.
    @discardableResult
    mutating func connectFailed(now: Double, unit: Double) -> Double {
        connecting = false
        consecutiveFailures += 1
        let delay = backoff.delay(afterFailures: consecutiveFailures, unit: unit)
        retryAt = now + delay
        return delay
    }

    /// An open connection closed (peer, timeout, error): later commands use others or reconnect.
    mutating func closed(_ id: ConnectionID) { open.removeAll { $0 == id } }

    /// No more commands; returns the connections to close.
    mutating func shutdown() -> [ConnectionID] {
        isShutdown = true
        defer { open = [] }
        return open
    }
}
