import Testing

@testable import RedisCache

/// The pool's rules, the reconnect back-off and the circuit breaker, with time passed in.
@Suite struct PoolAndBreakerTests {
    @Test func backoffDoublesToItsMaximumWithBoundedJitter() {
        let backoff = Backoff(base: 0.05, maximum: 5, jitter: 0.2)
        #expect(backoff.delay(afterFailures: 0, unit: 0.5) == 0)
        #expect(backoff.delay(afterFailures: 1, unit: 0.5) == 0.05)
        #expect(backoff.delay(afterFailures: 3, unit: 0.5) == 0.2)
        #expect(backoff.delay(afterFailures: 40, unit: 0.5) == 5)
        #expect(abs(backoff.delay(afterFailures: 1, unit: 0) - 0.04) < 1e-12)
        #expect(abs(backoff.delay(afterFailures: 1, unit: 1) - 0.06) < 1e-12)
    }

    @Test func poolConnectsOnceAndSharesTheConnect() {
        var pool = ConnectionPoolState(capacity: 2, backoff: Backoff(base: 1, maximum: 8, jitter: 0))
        let v1 = pool.lease(now: 0) { _ in 0 }
        #expect(v1 == .connectAndWait)
        let v2 = pool.lease(now: 0) { _ in 0 }
        #expect(v2 == .wait, "a second command must not start a second connect")
        pool.connected(10)
        let v3 = pool.lease(now: 0) { _ in 0 }
        #expect(v3 == .use(10))
        // Busy: use it now and open a second one in the background, once.
        let v4 = pool.lease(now: 0) { _ in 3 }
        #expect(v4 == .useAndConnect(10))
        let v5 = pool.lease(now: 0) { _ in 3 }
        #expect(v5 == .use(10))
        pool.connected(11)
        let v6 = pool.lease(now: 0) { $0 == 10 ? 3 : 1 }
        #expect(v6 == .use(11), "least loaded first")
        let v7 = pool.lease(now: 0) { _ in 9 }
        #expect(v7 == .use(10), "at capacity: pipeline on what is open")
        pool.closed(10)
        #expect(pool.open == [11])
    }

    @Test func failedConnectsBackOffAndFailFast() {
        var pool = ConnectionPoolState(capacity: 1, backoff: Backoff(base: 1, maximum: 8, jitter: 0))
        let v8 = pool.lease(now: 0) { _ in 0 }
        #expect(v8 == .connectAndWait)
        let v9 = pool.connectFailed(now: 0, unit: 0.5)
        #expect(v9 == 1)
        guard case .reject(let error) = pool.lease(now: 0.5, load: { _ in 0 }) else {
            Issue.record("during back-off commands must fail fast")
            return
        }
        #expect(error.kind == .unavailable)
        let v10 = pool.lease(now: 1) { _ in 0 }
        #expect(v10 == .connectAndWait)
        let v11 = pool.connectFailed(now: 1, unit: 0.5)
        #expect(v11 == 2)
        let v12 = pool.lease(now: 2.9) { _ in 0 }
        #expect(v12 != .connectAndWait)
        let v13 = pool.lease(now: 3) { _ in 0 }
        #expect(v13 == .connectAndWait)
        pool.connected(1)
        #expect(pool.consecutiveFailures == 0 && pool.retryAt == 0)
        #expect(pool.shutdown() == [1])
        guard case .reject = pool.lease(now: 4, load: { _ in 0 }) else {
            Issue.record("a shut-down pool refuses")
            return
        }
    }

    @Test func breakerOpensAfterThresholdAndProbesWithGrowingDelays() {
        var breaker = CircuitBreaker(failureThreshold: 3, backoff: Backoff(base: 1, maximum: 4, jitter: 0))
        let v14 = breaker.admit(now: 0)
        #expect(v14 == .call)
        let v15 = breaker.record(failed: true, now: 0, unit: 0.5)
        #expect(!v15)
        let v16 = breaker.record(failed: false, now: 0, unit: 0.5)
        #expect(!v16, "a success resets the count")
        let v17 = breaker.record(failed: true, now: 0, unit: 0.5)
        #expect(!v17)
        let v18 = breaker.record(failed: true, now: 0, unit: 0.5)
        #expect(!v18)
        let v19 = breaker.record(failed: true, now: 10, unit: 0.5)
        #expect(v19, "the third consecutive failure opens it")
        let v20 = breaker.admit(now: 10.5)
        #expect(v20 == .reject)
        let v21 = breaker.admit(now: 11)
        #expect(v21 == .probe)
        let v22 = breaker.admit(now: 11)
        #expect(v22 == .reject, "one probe at a time")
        // Late results of calls admitted before opening change nothing.
        let v23 = breaker.record(failed: false, now: 11, unit: 0.5)
        #expect(!v23)
        let v24 = breaker.probeEnded(succeeded: false, now: 12, unit: 0.5)
        #expect(!v24)
        let v25 = breaker.admit(now: 13.9)
        #expect(v25 == .reject)
        let v26 = breaker.admit(now: 14)
        #expect(v26 == .probe, "second delay is twice the first")
        let v27 = breaker.probeEnded(succeeded: false, now: 14, unit: 0.5)
        #expect(!v27)
        let v28 = breaker.admit(now: 17.9)
        #expect(v28 == .reject)
        let v29 = breaker.admit(now: 18)
        #expect(v29 == .probe)
        let v30 = breaker.probeEnded(succeeded: false, now: 18, unit: 0.5)
        #expect(!v30)
        let v31 = breaker.admit(now: 21.9)
        #expect(v31 == .reject, "capped at the maximum")
        let v32 = breaker.admit(now: 22)
        #expect(v32 == .probe)
        let v33 = breaker.probeEnded(succeeded: true, now: 22, unit: 0.5)
        #expect(v33)
        let v34 = breaker.admit(now: 22)
        #expect(v34 == .call)
        #expect(breaker.isClosed)
    }

    @Test func whichErrorsCountAsUnavailability() {
        #expect(RedisClientError(.timedOut).isUnavailability)
        #expect(RedisClientError(.connectFailed).isUnavailability)
        for message in [
            "OOM command not allowed", "READONLY You can't write against a read only replica.",
            "LOADING Redis is loading the dataset in memory", "CLUSTERDOWN The cluster is down",
        ] {
            #expect(RedisClientError(.server, message).isUnavailability, "\(message)")
        }
        #expect(
            !RedisClientError(.server, "WRONGTYPE Operation against a key holding the wrong kind of value")
                .isUnavailability)
        #expect(RedisClientError(.server, "OOM x").serverErrorCode == "OOM")
    }
}
