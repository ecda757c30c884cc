import Foundation
import WebImage

/// One reading of the process's resources.
struct ProcessSample: Sendable {
    var seconds: Double
    var residentBytes: Int
    /// RSS after `malloc_trim` gave the allocator's free pages back: what the process really holds.
    var trimmedResidentBytes: Int
    /// Bytes malloc has handed out and not had back (glibc's `malloc_info`): grows with a leak, not with
    /// fragmentation, which lifts RSS only.
    var heapInUseBytes: Int
    var openFiles: Int
    var threads: Int
    var completedLoads: Int
    var inFlight: Int

    static let csvHeader =
        "seconds,rss_bytes,rss_trimmed_bytes,open_fds,threads,completed_loads,in_flight,heap_in_use_bytes"
    var csvLine: String {
        "\(seconds),\(residentBytes),\(trimmedResidentBytes),\(openFiles),\(threads),\(completedLoads),\(inFlight),"
            + "\(heapInUseBytes)"
    }

    /// glibc's `malloc_trim`, looked up at run time (it is not in the Glibc module): returning free pages to the
    /// kernel before reading RSS keeps the allocator's cached pages out of the growth check.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    private static let mallocInfo: (@convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_info") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32).self)
    }()

    /// The heap's bytes in use, from the process-wide totals `malloc_info` writes after its last `</heap>`:
    /// the memory the arenas got from the system, less what sits in their free lists, plus mmapped chunks.
    private static func heapInUse() -> Int {
        guard let mallocInfo else { return 0 }
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return 0 }
        _ = mallocInfo(0, stream)
        fclose(stream)
        guard let buffer else { return 0 }
        defer { free(buffer) }
        let totals = String(cString: buffer).components(separatedBy: "</heap>").last ?? ""
        // Each line reads `<total type="rest" count="1" size="50224"/>` or `<system type="current" size="…"/>`.
        func sizeField(_ element: String) -> Int {
            guard let start = totals.range(of: element),
                let field = totals[start.upperBound...].range(of: " size=\"")
            else { return 0 }
            return Int(totals[field.upperBound...].prefix { $0 != "\"" }) ?? 0
        }
        let free = sizeField("<total type=\"fast\"") + sizeField("<total type=\"rest\"")
        return sizeField("<system type=\"current\"") - free + sizeField("<total type=\"mmap\"")
    }

    private static func residentPages() -> Int {
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        return statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    }

    /// Reads /proc/self: resident set (statm) before and after giving free pages back, open descriptors (fd/),
    /// threads (status).
    static func read(seconds: Double, completedLoads: Int, inFlight: Int) -> ProcessSample {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let resident = residentPages()
        _ = mallocTrim?(0)
        let trimmed = residentPages()
        let inUse = heapInUse()
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 1) - 1
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let threads =
            status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
            .flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return ProcessSample(
            seconds: seconds, residentBytes: resident * pageSize, trimmedResidentBytes: trimmed * pageSize,
            heapInUseBytes: inUse,
            openFiles: fds,
            threads: threads, completedLoads: completedLoads, inFlight: inFlight)
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
/// quarter's median is compared with the first quarter's, with a slack for normal churn. Medians, not peaks: a
/// leak lifts every sample, while a burst of queued work (the disk cache's write backlog, bounded) lifts a few.
struct GrowthCheck: Sendable {
    let name: String
    /// Growth allowed on top of the first quarter's median: absolute, and as a fraction of it.
    let absoluteSlack: Double
    let relativeSlack: Double

    func verdict(_ values: [Double]) -> String? {
        guard values.count >= 8 else { return "\(name): too few samples (\(values.count)) to judge" }
        let quarter = values.count / 4
        let early = Self.median(values.prefix(quarter))
        let late = Self.median(values.suffix(quarter))
        let allowed = early + max(absoluteSlack, early * relativeSlack)
        return late > allowed
            ? "\(name) kept growing: median \(Self.format(late)) in the last quarter vs \(Self.format(early)) after warm-up (allowed \(Self.format(allowed)))"
            : nil
    }

    private static func median(_ values: some Collection<Double>) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    private static func format(_ value: Double) -> String {
        value >= 1_048_576 ? String(format: "%.1f MiB", value / 1_048_576) : String(format: "%.0f", value)
    }
}
