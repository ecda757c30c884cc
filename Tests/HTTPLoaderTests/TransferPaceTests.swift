import Testing

@testable import HTTPLoader

/// The deadline and minimum-rate rules on their own, with an injected clock (nanoseconds).
@Suite struct TransferPaceTests {
    static let second: UInt64 = 1_000_000_000

    /// Checks every quarter second from `start` until `until`, with `bytes(t)` received by time t.
    private func firstVerdict(
        _ pace: inout TransferPace, until: UInt64, step: UInt64 = second / 4, bytes: (UInt64) -> Int
    ) -> (UInt64, TransferPace.Verdict)? {
        var now = pace.startedAt
        while now <= pace.startedAt + until {
            let verdict = pace.check(now: now, totalBytes: bytes(now - pace.startedAt))
            if verdict != .ok { return (now - pace.startedAt, verdict) }
            now += step
        }
        return nil
    }

    @Test func theDeadlineEndsEvenAFastTransfer() {
        var pace = TransferPace(startedAt: 5 * Self.second, timeout: 3, rate: nil)
        let ended = firstVerdict(&pace, until: 10 * Self.second) { Int($0 / 1000) }  // 1 MB/s
        #expect(ended?.0 == 3 * Self.second)
        #expect(ended?.1 == .deadlineExceeded(seconds: 3))
    }

    @Test func aSteadyTransferAboveTheRateRunsUntilItsDeadline() {
        let rate = HTTPTransferRate(bytes: 1000, seconds: 2)
        var pace = TransferPace(startedAt: 0, timeout: 30, rate: rate)
        let ended = firstVerdict(&pace, until: 40 * Self.second) { Int($0 / Self.second) * 600 }  // 600 B/s
        #expect(ended?.1 == .deadlineExceeded(seconds: 30))
    }

    @Test func aDripJustUnderTheIdleTimeoutIsCutAfterOneWindow() throws {
        // One byte every 14 s would keep a 15 s idle timeout happy forever.
        let rate = HTTPTransferRate(bytes: 16 * 1024, seconds: 10)
        var pace = TransferPace(startedAt: 0, timeout: .infinity, rate: rate)
        let ended = firstVerdict(&pace, until: 100 * Self.second) { Int($0 / (14 * Self.second)) + 1 }
        let (at, verdict) = try #require(ended)
        guard case .tooSlow(let bytes, let seconds) = verdict else {
            Issue.record("expected tooSlow, got \(verdict)")
            return
        }
        #expect(bytes < 16 * 1024)
        #expect(seconds >= 10 && seconds <= 12.5)
        // Judged after the grace period (one window), at the latest a quarter window later.
        #expect(at >= 10 * Self.second && at <= 12_500_000_000)
    }

    @Test func theGracePeriodForgivesASlowStart() {
        // Nothing for 8 s (a slow backend), then fast: a 10 s grace period lets it through.
        let rate = HTTPTransferRate(bytes: 1000, seconds: 2, gracePeriod: 10)
        var pace = TransferPace(startedAt: 0, timeout: 60, rate: rate)
        let ended = firstVerdict(&pace, until: 30 * Self.second) { $0 < 8 * Self.second ? 0 : Int($0 / 1000) }
        #expect(ended?.1 == .deadlineExceeded(seconds: 60) || ended == nil)
        // Without the grace period the same start is too slow.
        var strict = TransferPace(startedAt: 0, timeout: 60, rate: HTTPTransferRate(bytes: 1000, seconds: 2))
        let cut = firstVerdict(&strict, until: 30 * Self.second) { $0 < 8 * Self.second ? 0 : Int($0 / 1000) }
        #expect(cut.map { $0.0 <= 3 * Self.second } == true)
    }

    @Test func aTransferThatSlowsDownLaterIsCaught() throws {
        let rate = HTTPTransferRate(bytes: 1000, seconds: 2)
        var pace = TransferPace(startedAt: 0, timeout: .infinity, rate: rate)
        // 10 kB/s for 20 s, then nothing more.
        let ended = firstVerdict(&pace, until: 60 * Self.second) { Int(min($0, 20 * Self.second) / 100_000) }
        let at = try #require(ended?.0)
        #expect(at > 20 * Self.second && at <= 22_500_000_000)
    }

    @Test func noRateAndNoDeadlineNeedNoWatching() {
        var pace = TransferPace(startedAt: 0, timeout: .infinity, rate: nil)
        #expect(!pace.isWatched)
        #expect(pace.check(now: UInt64.max / 2, totalBytes: 0) == .ok)
        #expect(TransferPace(startedAt: 0, timeout: 0, rate: HTTPTransferRate(bytes: 0, seconds: 1)).isWatched == false)
        #expect(TransferPace(startedAt: 0, timeout: 60, rate: nil).checkInterval == 60 * Self.second / 8)
        #expect(
            TransferPace(startedAt: 0, timeout: 60, rate: HTTPTransferRate(bytes: 1, seconds: 4)).checkInterval
                == Self.second)
    }

    @Test func aClockGoingBackwardsIsHarmless() {
        var pace = TransferPace(startedAt: 10 * Self.second, timeout: 1, rate: HTTPTransferRate(bytes: 1, seconds: 1))
        #expect(pace.check(now: 0, totalBytes: 0) == .ok)
    }
}
