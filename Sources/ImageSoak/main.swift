import Foundation
import WebImage

// The soak: a bounded run of mixed traffic (hits, misses, cancels mid-flight, slow, stalled, truncated, garbage
// and decompression-bomb responses, animated thumbnails, disk sweeps) against a local server, through one
// ImageManager with a small memory cache and a small disk cache. It samples RSS, open descriptors and threads
// every second and fails (exit 1) if any kept growing after warm-up, a load never completed, a load gave a
// wrong result, or the traffic missed a kind. A crash fails it too.
//
//   image-soak [--seconds 120] [--workers 8] [--seed 1] [--csv soak.csv] [--kinds hit,miss,...] [--memory-mb 8]

struct SoakOptions {
    var seconds = 120
    var workers = 8
    var seed: UInt64 = 1
    var csv: String?
    var kinds = LoadKind.allCases
    /// The memory cache's cost limit; small, so entries are evicted and loaded again all the time.
    var memoryMegabytes = 8
    /// A load pending longer than this never completes: every download has a 5 s timeout.
    var overdueSeconds = 60

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--seconds": seconds = max(20, Int(value) ?? seconds)
            case "--workers": workers = max(1, Int(value) ?? workers)
            case "--seed": seed = UInt64(value) ?? seed
            case "--csv": csv = value
            case "--memory-mb": memoryMegabytes = max(1, Int(value) ?? memoryMegabytes)
            case "--kinds": kinds = value.split(separator: ",").compactMap { LoadKind(rawValue: String($0)) }
            default:
                FileHandle.standardError.write(Data("image-soak: unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }

    var warmUpSeconds: Double { min(30, Double(seconds) / 4) }
}

let options = SoakOptions(CommandLine.arguments)
/// Prints a line unbuffered, so progress reaches a log file as it happens.
func report(_ line: String = "") { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
for coder: any ImageCoder in [PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared] {
    CodersManager.shared.addCoder(coder)
}
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("image-soak-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }

let memory = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: options.memoryMegabytes << 20))
// Small enough that the misses overflow it within seconds: sweeps run throughout.
let disk = DiskCache(
    configuration: DiskCacheConfiguration(
        directory: directory, maxDiskSize: 4 << 20, sweepInterval: 2, maxWriteBacklogBytes: 4 << 20))
var loaderConfiguration = HTTPLoaderConfiguration()
loaderConfiguration.timeout = 5
let http = HTTPLoader(configuration: loaderConfiguration)
let manager = ImageManager(cache: CachesManager([memory, disk]), loader: http)

let server = try SoakServer()
let base = try await server.start()
let traffic = SoakTraffic(
    manager: manager, base: base, workers: options.workers, seed: options.seed, kinds: options.kinds)
let sampler = ProcessSampler { [traffic] in (traffic.tally.value.completed, traffic.inFlight.count) }

report("image-soak: \(options.seconds) s, \(options.workers) workers, seed \(options.seed), server \(base)")
let deadline = ContinuousClock.now + .seconds(options.seconds)
let done = Locked(false)
let run = Task { [traffic] in
    await traffic.run(until: deadline)
    done.withLock { $0 = true }
}

// Progress every 10 s; a load pending past the limit fails the run, and a run that can't drain is cut.
var failures: [String] = []
let hardStop = deadline + .seconds(options.overdueSeconds + 10)
var lastReport = ContinuousClock.now
while !done.value {
    try await Task.sleep(for: .milliseconds(250))
    if ContinuousClock.now - lastReport >= .seconds(10), let sample = sampler.latest {
        lastReport = .now
        report(
            String(
                format: "  %4.0f s  rss %6.1f MiB  trimmed %6.1f MiB  heap in use %6.1f MiB  fds %3d  threads %3d"
                    + "  loads %7d  in flight %3d",
                sample.seconds, Double(sample.residentBytes) / 1_048_576,
                Double(sample.trimmedResidentBytes) / 1_048_576, Double(sample.heapInUseBytes) / 1_048_576,
                sample.openFiles, sample.threads,
                sample.completedLoads, sample.inFlight))
    }
    let overdue = traffic.inFlight.overdue(.seconds(options.overdueSeconds))
    if !overdue.isEmpty || ContinuousClock.now > hardStop {
        failures.append("loads that never completed: \(overdue.count)")
        failures += overdue.prefix(10).map { "  \($0)" }
        break
    }
}
let samples = sampler.stop()
if !failures.isEmpty {
    for line in failures { report("FAIL \(line)") }
    exit(1)
}
await run.value
try await http.shutdown()
try await server.stop()

if let csv = options.csv {
    let text = ([ProcessSample.csvHeader] + samples.map(\.csvLine)).joined(separator: "\n") + "\n"
    try text.write(toFile: csv, atomically: true, encoding: .utf8)
}

let tally = traffic.tally.value
let warm = samples.filter { $0.seconds >= options.warmUpSeconds && $0.seconds <= Double(options.seconds) }
let checks: [(GrowthCheck, [Double])] = [
    (
        GrowthCheck(name: "RSS after malloc_trim", absoluteSlack: Double(16 << 20), relativeSlack: 0.15),
        warm.map { Double($0.trimmedResidentBytes) }
    ),
    (
        GrowthCheck(name: "heap in use", absoluteSlack: Double(12 << 20), relativeSlack: 0.15),
        warm.map { Double($0.heapInUseBytes) }
    ),
    (GrowthCheck(name: "open descriptors", absoluteSlack: 8, relativeSlack: 0), warm.map { Double($0.openFiles) }),
    (GrowthCheck(name: "threads", absoluteSlack: 4, relativeSlack: 0), warm.map { Double($0.threads) }),
]
failures += checks.compactMap { $0.0.verdict($0.1) }
failures += tally.wrong
failures += options.kinds.filter { tally.byKind[$0, default: 0] == 0 }.map { "no \($0.rawValue) load ran" }
if tally.completed != tally.started { failures.append("\(tally.started - tally.completed) loads did not complete") }

let elapsed = Double(options.seconds)
report("\nloads: \(tally.completed) in \(options.seconds) s (\(Int(Double(tally.completed) / elapsed))/s)")
for kind in LoadKind.allCases {
    let count = tally.byKind[kind, default: 0]
    let time = tally.timeByKind[kind, default: .zero] / max(1, count)
    report("  \(kind.rawValue): \(count), mean \(time.formatted(.units(allowed: [.milliseconds])))")
}
report("outcomes:")
for (outcome, count) in tally.outcomes.sorted(by: { $0.key < $1.key }) { report("  \(outcome): \(count)") }
if let first = warm.first, let last = warm.last {
    report(
        String(
            format:
                "after warm-up: rss (after malloc_trim) %.1f → %.1f MiB, heap in use %.1f → %.1f MiB, fds %d → %d, threads %d → %d",
            Double(first.trimmedResidentBytes) / 1_048_576, Double(last.trimmedResidentBytes) / 1_048_576,
            Double(first.heapInUseBytes) / 1_048_576, Double(last.heapInUseBytes) / 1_048_576,
            first.openFiles,
            last.openFiles, first.threads, last.threads))
}
report("disk cache: \(disk.totalSize()) bytes; memory cache: \(memory.totalCost) bytes")
if failures.isEmpty {
    report("image-soak: passed")
} else {
    for line in failures { report("FAIL \(line)") }
    exit(1)
}
