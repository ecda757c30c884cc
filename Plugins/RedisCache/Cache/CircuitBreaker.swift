/// Stops calling a Redis that keeps failing, and probes it with back-off until it answers again. Pure: the time
/// and the jitter are passed in, so it is tested without a clock.
///
/// - closed: calls go through; `failureThreshold` consecutive failures open it.
/// - open: calls are refused (the cache answers a miss at once) until the back-off delay has passed; the first
///   call after that gets ``Admission/probe``: the cache refuses that call too and sends one `PING` in the
///   background, so no caller ever waits on a dead server.
/// - probing: calls are refused until the probe ends; success closes the breaker, failure opens it again with
///   the next, longer delay.
///
/// Results of calls admitted while closed that end after the breaker opened are ignored: only the probe
/// decides when a dead server is back.
struct CircuitBreaker: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case closed(failures: Int)
        case open(until: Double, openings: Int)
        case probing(openings: Int)
    }

    enum Admission: Sendable, Equatable {
        /// Make the call.
        case call
        /// Refuse the call; send a probe now.
        case probe
        /// Refuse the call.
        case reject
    }

    let failureThreshold: Int
    let backoff: Backoff
    private(set) var state: State = .closed(failures: 0)

    init(failureThreshold: Int, backoff: Backoff) {
        self.failureThreshold = max(1, failureThreshold)
        self.backoff = backoff
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Whether a call may go to the server now.
    mutating func admit(now: Double) -> Admission {
        switch state {
        case .closed:
            return .call
        case .open(let until, let openings):
            guard now >= until else { return .reject }
            state = .probing(openings: openings)
            return .probe
        case .probing:
            return .reject
        }
    }

    /// An admitted call ended; `failed` when the server was unavailable (see
    /// `RedisClientError.isUnavailability`). Returns true when this failure opened the breaker.
    @discardableResult
    mutating func record(failed: Bool, now: Double, unit: Double) -> Bool {
        guard case .closed(let failures) = state else { return false }
        guard failed else {
            state = .closed(failures: 0)
            return false
        }
        guard failures + 1 >= failureThreshold else {
            state = .closed(failures: failures + 1)
            return false
        }
        state = .open(until: now + backoff.delay(afterFailures: 1, unit: unit), openings: 1)
        return true
    }

    /// The probe ended. Returns true when the breaker closed.
    @discardableResult
    mutating func probeEnded(succeeded: Bool, now: Double, unit: Double) -> Bool {
        guard case .probing(let openings) = state else { return false }
        if succeeded {
            state = .closed(failures: 0)
            return true
        }
        state = .open(until: now + backoff.delay(afterFailures: openings + 1, unit: unit), openings: openings + 1)
        return false
    }
}
