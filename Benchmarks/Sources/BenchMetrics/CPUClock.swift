import Benchmark
import Foundation

extension BenchmarkMetric {
    /// CPU time of the whole process (all threads) over the measured region, from `CLOCK_PROCESS_CPUTIME_ID`,
    /// in nanoseconds. Unlike `.cpuTotal` (sampled in 10 ms ticks) it is exact for short operations, and unlike
    /// wall-clock time it does not grow when other processes compete for the cores.
    public static var cpuTimeNs: BenchmarkMetric { .custom("cpuTimeNs") }
}

/// Measures process CPU time between `start` and `stop` and records it as ``BenchmarkMetric/cpuTimeNs``.
public struct CPUClock {
    private let started: Int

    private init(started: Int) { self.started = started }

    /// The process CPU time now, in nanoseconds.
    public static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }

    /// Starts measuring; call right after `benchmark.startMeasurement()` (or first thing in the closure).
    public static func start() -> CPUClock { CPUClock(started: now()) }

    /// Records the CPU time since ``start()`` on `benchmark`.
    public func stop(_ benchmark: Benchmark) {
        benchmark.measurement(.cpuTimeNs, CPUClock.now() - started)
    }
}

/// Units for the count-like metrics of every suite: raw counts, so the exported percentiles keep every digit
/// (left automatic, the tool would round a 63,000,000 ns CPU time to "63 M").
public func rawCountUnits() -> [BenchmarkMetric: BenchmarkUnits] {
    [
        .cpuTimeNs: .count, .mallocCountTotal: .count, .peakMemoryResident: .count, .syscalls: .count,
        .custom("bytes"): .count, .custom("loaderRequests"): .count,
    ]
}
