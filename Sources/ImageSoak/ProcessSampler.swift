import Foundation
import WebImage

/// One reading of the process's resources.
struct ProcessSample: Sendable {
    var seconds: Double
    var residentBytes: Int
    var openFiles: Int
    var threads: Int
    var completedLoads: Int
    var inFlight: Int

    static let csvHeader = "seconds,rss_bytes,open_fds,threads,completed_loads,in_flight"
    var csvLine: String { "\(seconds),\(residentBytes),\(openFiles),\(threads),\(completedLoads),\(inFlight)" }

    /// Reads /proc/self: resident set (statm), open descriptors (fd/), threads (status).
    static func read(seconds: Double, completedLoads: Int, inFlight: Int) -> ProcessSample {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let resident = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 1) - 1
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let threads =
            status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
            .flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return ProcessSample(
            seconds: seconds, residentBytes: resident * pageSize, openFiles: fds, threads: threads,
            completedLoads: completedLoads, inFlight: inFlight)
    }
}

/// Samples the process every second on its own thread (not the cooperative pool the traffic keeps busy).
final class ProcessSampler: Sendable {
    private let samples = Locked([ProcessSample]())
    private let running = Locked(true)
    private let finished = DispatchSemaphore(value: 0)

    init(progress: @escaping @Sendable () -> (completed: Int, inFlight: Int)) {
        let start = ContinuousClock.now
        let thread = Thread { [samples, running, finished] in
            while running.value {
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                let (completed, inFlight) = progress()
                samples.withLock {
                    $0.append(ProcessSample.read(seconds: seconds, completedLoads: completed, inFlight: inFlight))
                }
                Thread.sleep(forTimeInterval: 1)
            }
            finished.signal()
        }
        thread.name = "soak-sampler"
        thread.start()
    }

    /// Stops sampling and returns every sample taken.
    func stop() -> [ProcessSample] {
        running.withLock { $0 = false }
        finished.wait()
        return samples.value
    }

    var latest: ProcessSample? { samples.withLock { $0.last } }
}

/// Whether a resource kept growing after warm-up: the post-warm-up samples are cut in quarters and the last
/// quarter's peak is compared with the first quarter's peak, with a slack for normal churn (connections
/// opening and closing, the allocator's arenas).
struct GrowthCheck: Sendable {
    let name: String
    /// Growth allowed on top of the first quarter's peak: absolute, and as a fraction of it.
    let absoluteSlack: Double
    let relativeSlack: Double

    func verdict(_ values: [Double]) -> String? {
        guard values.count >= 8 else { return "\(name): too few samples (\(values.count)) to judge" }
        let quarter = values.count / 4
        let early = values.prefix(quarter).max() ?? 0
        let late = values.suffix(quarter).max() ?? 0
        let allowed = early + max(absoluteSlack, early * relativeSlack)
        return late > allowed
            ? "\(name) kept growing: peak \(Self.format(late)) in the last quarter vs \(Self.format(early)) after warm-up (allowed \(Self.format(allowed)))"
            : nil
    }

    private static func format(_ value: Double) -> String {
        value >= 1_048_576 ? String(format: "%.1f MiB", value / 1_048_576) : String(format: "%.0f", value)
    }
}
