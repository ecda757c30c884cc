import Foundation
import Testing

/// Opt-in: reproduces a starved cooperative thread pool (CPU-heavy suites of other targets in the same process)
/// while this target's tests run, to check that they fail or pass but never hang.
///
/// `HTTP_STARVE_SECONDS=70 HTTP_STARVE_DELAY=1.5 swift test --filter "^HTTPLoaderTests\."` keeps every thread of the
/// pool (two, on a 2-core machine) busy for 70 seconds, starting 1.5 seconds in. Many timing-bound tests fail then;
/// the run must still end.
@Suite struct StarvationHog {
    private static let seconds = ProcessInfo.processInfo.environment["HTTP_STARVE_SECONDS"].flatMap(Double.init) ?? 0

    @Test(.enabled(if: seconds > 0)) func starveTheCooperativePool() async {
        let delay = ProcessInfo.processInfo.environment["HTTP_STARVE_DELAY"].flatMap(Double.init) ?? 0
        try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
        let threads = ProcessInfo.processInfo.activeProcessorCount
        let seconds = Self.seconds
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    // Blocking on purpose: that is what a CPU-heavy synchronous test does to the pool.
                    let end = Date().addingTimeInterval(seconds)
                    var sum = 0
                    while Date() < end { for value in 0..<10_000 { sum &+= value } }
                    return sum
                }
            }
            for await _ in group {}
        }
    }
}
