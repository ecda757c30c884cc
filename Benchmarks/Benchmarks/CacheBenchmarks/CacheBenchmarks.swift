import BenchMetrics
import BenchSupport
import Benchmark
import CBaselines
import DiskCache
import Dispatch
import Foundation
import ImageCore
import MemoryCache
import Synchronization

// Issue 4: memory hits from 1 and 2 threads against a Mutex-protected Dictionary; disk hit, store and sweep
// against raw open+read, write+rename and a readdir+stat walk of the same directory. Issue 10: stores with as
// many writers as cores on both sides. Issue 23: the disk-hit and store rows are also run five times by
// cache-passes.sh (median and worst pass).

/// The plain baseline: a dictionary behind a `Mutex`, no LRU bookkeeping.
final class LockedDictionary: Sendable {
    let storage = Mutex<[String: Image]>([:])
    func set(_ image: Image, forKey key: String) { storage.withLock { $0[key] = image } }
    func image(forKey key: String) -> Image? { storage.withLock { $0[key] } }
}

let entryCount = 1_000
let keys = (0..<entryCount).map { "https://example.com/images/\($0).jpg" }
let tile = Pixels(width: 32, height: 32, channels: 4, bytes: [UInt8](repeating: 7, count: 32 * 32 * 4)).image

/// Fresh temporary directory under the system temp dir.
func temporaryDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "webimage-bench-\(name)-\(getpid())", isDirectory: true)
    try? FileManager.default.removeItem(at: url)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A cache as a server would configure it (default age and size limits, so stores do their size accounting and
/// write-driven sweeps), minus the periodic timer, so nothing but the measured calls touches the directory.
func makeDiskCache(_ directory: URL) -> DiskCache {
    DiskCache(configuration: DiskCacheConfiguration(directory: directory, sweepInterval: nil))
}

/// Writers in the store rows: one, and as many as cores (issue 10: "at the same parallelism").
let cores = ProcessInfo.processInfo.activeProcessorCount
let writerCounts = cores > 1 ? [1, cores] : [1]

/// Runs `count` operations split over `threads` threads (thread `t` does operations `t, t + threads, …`) and
/// waits.
func split(_ count: Int, over threads: Int, _ body: @Sendable (_ thread: Int, _ operation: Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        var operation = thread
        while operation < count {
            body(thread, operation)
            operation += threads
        }
    }
}

/// Runs `body` on `threads` threads at once (each calls it `count` times with its own key offset) and waits.
func onThreads(_ threads: Int, _ count: Int, _ body: @Sendable (Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        var index = thread * 7919
        for _ in 0..<count {
            body(index % entryCount)
            index &+= 1
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    // MARK: Memory hits. Per-op figures: each iteration is `scaledIterations` lookups per thread.
    let perOp = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .mallocCountTotal], timeUnits: .nanoseconds, units: rawCountUnits(),
        warmupIterations: 3,
        scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 2_000)
    let memory = MemoryCache()
    let locked = LockedDictionary()
    for key in keys {
        memory.setImage(tile, forKey: key)
        locked.set(tile, forKey: key)
    }
    for threads in [1, 2] {
        Benchmark("Cache_memoryHit_\(threads)thread_MemoryCache", configuration: perOp) { benchmark in
            let cpu = CPUClock.start()
            onThreads(threads, benchmark.scaledIterations.count) { blackHole(memory.image(forKey: keys[$0])) }
            cpu.stop(benchmark)
        }
        Benchmark("Cache_memoryHit_\(threads)thread_MutexDictionary", configuration: perOp) { benchmark in
            let cpu = CPUClock.start()
            onThreads(threads, benchmark.scaledIterations.count) { blackHole(locked.image(forKey: keys[$0])) }
            cpu.stop(benchmark)
        }
    }

    // MARK: Disk hit and store of a 50 KB entry, 100 entries cycled (page cache warm).
    let diskPerOp = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .syscalls], timeUnits: .nanoseconds,
        units: rawCountUnits(),
        warmupIterations: 2, scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 200)
    // A store of 1,000 entries takes about a second on a loaded 2-core machine: give the store rows time for
    // several samples (cache-passes.sh runs them five times, issue 23 item 8).
    var diskStore = diskPerOp
    diskStore.maxDuration = .seconds(6)

    Benchmark("Cache_diskHit_50KB_DiskCache", configuration: diskPerOp) { benchmark in
        let fixture = hitFixture
        let cpu = CPUClock.start()
        for index in benchmark.scaledIterations {
            blackHole(try fixture.cache.entry(forKey: diskKeys[index % diskKeys.count]))
        }
        cpu.stop(benchmark)
    } setup: {
        try hitFixture.fill()
    } teardown: {
        hitFixture.remove()
    }

    // The same hits with `verifiesChecksums` on (XXH64 of every body read): what the option costs.
    Benchmark("Cache_diskHit_50KB_DiskCacheVerified", configuration: diskPerOp) { benchmark in
        let fixture = hitFixture
        let cpu = CPUClock.start()
        for index in benchmark.scaledIterations {
            blackHole(try fixture.verifyingCache.entry(forKey: diskKeys[index % diskKeys.count]))
        }
        cpu.stop(benchmark)
    } setup: {
        try hitFixture.fill()
    } teardown: {
        hitFixture.remove()
    }

    Benchmark("Cache_diskHit_50KB_rawOpenRead", configuration: diskPerOp) { benchmark in
        let fixture = hitFixture
        // One buffer per 1,000 reads: its allocation is noise next to them.
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 20)
        defer { buffer.deallocate() }
        let cpu = CPUClock.start()
        defer { cpu.stop(benchmark) }
        for index in benchmark.scaledIterations {
            let count = cb_read_file(fixture.paths[index % fixture.paths.count], buffer.baseAddress, buffer.count)
            if count < 50_000 { benchmark.error("raw read returned \(count) bytes") }
            blackHole(count)
        }
    } setup: {
        try hitFixture.fill()
    } teardown: {
        hitFixture.remove()
    }

    // Stores: each writer cycles over its own 100 keys (so writers never race on one file in either row); the
    // SDK through the blocking `storeData` (the caller's thread does the write, as a raw writer would) and
    // through the asynchronous `store` the manager uses (one submitter, the write pool writes, all completions
    // awaited), the baseline through C open+write+close+rename.
    for writers in writerCounts {
        Benchmark("Cache_store_50KB_\(writers)writers_DiskCache", configuration: diskStore) { benchmark in
            let fixture = storeFixture
            let count = benchmark.scaledIterations.count
            let failures = Atomic<Int>(0)
            let cpu = CPUClock.start()
            split(count, over: writers) { thread, operation in
                do {
                    try fixture.cache.storeData(payload, forKey: storeKeys[thread][operation % 100])
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            cpu.stop(benchmark)
            if failures.load(ordering: .relaxed) > 0 {
                benchmark.error("\(failures.load(ordering: .relaxed)) stores failed")
            }
        } teardown: {
            storeFixture.remove()
        }

        Benchmark("Cache_store_50KB_\(writers)writers_rawWriteRename", configuration: diskStore) { benchmark in
            let fixture = storeFixture
            let count = benchmark.scaledIterations.count
            let failures = Atomic<Int>(0)
            let cpu = CPUClock.start()
            split(count, over: writers) { thread, operation in
                let name = rawStoreNames[thread][operation % 100]
                if cb_write_rename(fixture.rawDirectory, name, payloadBytes.baseAddress, payloadBytes.count) != 0 {
                    failures.add(1, ordering: .relaxed)
                }
            }
            cpu.stop(benchmark)
            if failures.load(ordering: .relaxed) > 0 { benchmark.error("raw write+rename failed") }
        } teardown: {
            storeFixture.remove()
        }
    }

    Benchmark("Cache_store_50KB_asyncPool_DiskCache", configuration: diskStore) { benchmark in
        let fixture = storeFixture
        let count = benchmark.scaledIterations.count
        let done = DispatchSemaphore(value: 0)
        let failures = Atomic<Int>(0)
        let cpu = CPUClock.start()
        for operation in 0..<count {
            let thread = operation % cores
            fixture.cache.store(
                nil, data: payload, metadata: nil, forKey: storeKeys[thread][(operation / cores) % 100],
                cacheType: .disk
            ) { result in
                if case .failure = result { failures.add(1, ordering: .relaxed) }
                done.signal()
            }
        }
        for _ in 0..<count { done.wait() }
        cpu.stop(benchmark)
        if failures.load(ordering: .relaxed) > 0 {
            benchmark.error("\(failures.load(ordering: .relaxed)) stores failed")
        }
    } teardown: {
        storeFixture.remove()
    }

    // MARK: Sweep of a large directory (nothing to trim: the cost of walking and checking every entry).
    let sweepConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .syscalls], timeUnits: .nanoseconds, units: rawCountUnits(),
        warmupIterations: 1,
        maxDuration: .seconds(4), maxIterations: 10)
    Benchmark("Cache_sweep_\(sweepEntries)_DiskCache", configuration: sweepConfig) { benchmark in
        let cpu = CPUClock.start()
        sweepFixture.cache.sweep()
        cpu.stop(benchmark)
    } setup: {
        try sweepFixture.fill()
    }
    Benchmark("Cache_sweep_\(sweepEntries)_rawReaddirStat", configuration: sweepConfig) { benchmark in
        var size: Int64 = 0
        let cpu = CPUClock.start()
        let count = cb_walk_stat(sweepFixture.directory.path, &size)
        cpu.stop(benchmark)
        if count < sweepEntries { benchmark.error("walk found \(count) files") }
        blackHole(size)
    } setup: {
        try sweepFixture.fill()
    }
}

// MARK: Fixtures (globals are created on first use, i.e. only in the process of the benchmark that needs them)

let payload = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
/// The same bytes for the C baseline; never freed, never written after creation.
nonisolated(unsafe) let payloadBytes: UnsafeBufferPointer<UInt8> = {
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: payload.count)
    _ = buffer.initialize(from: payload)
    return UnsafeBufferPointer(buffer)
}()
let diskKeys = Array(keys.prefix(100))
/// 100 keys per writer thread, and the raw baseline's file names alike.
let storeKeys = (0..<max(cores, 1)).map { thread in (0..<100).map { "https://example.com/w\(thread)/\($0).jpg" } }
let rawStoreNames = (0..<max(cores, 1)).map { thread in (0..<100).map { "entry-\(thread)-\($0)" } }

/// 100 entries of 50 KB stored through DiskCache; the raw baseline reads the very same files.
final class HitFixture: Sendable {
    let directory = temporaryDirectory("hit")
    let cache: DiskCache
    /// A second cache over the same directory that checks every body against its checksum.
    let verifyingCache: DiskCache
    let paths: [String]

    init() {
        let cache = makeDiskCache(directory)
        self.cache = cache
        var verifying = DiskCacheConfiguration(directory: directory, sweepInterval: nil)
        verifying.verifiesChecksums = true
        verifyingCache = DiskCache(configuration: verifying)
        paths = diskKeys.map { cache.fileURL(forKey: $0).path }
    }

    func fill() throws {
        for key in diskKeys { try cache.storeData(payload, forKey: key) }
        guard try cache.entry(forKey: diskKeys[0])?.data == payload else {
            throw SetupFailure(description: "DiskCache did not return the stored bytes")
        }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}
let hitFixture = HitFixture()

/// An SDK cache directory and a raw directory to store into.
final class StoreFixture: Sendable {
    let directory = temporaryDirectory("store")
    let cache: DiskCache
    let rawDirectory: String

    init() {
        cache = makeDiskCache(directory.appendingPathComponent("sdk"))
        rawDirectory = directory.appendingPathComponent("raw").path
        try? FileManager.default.createDirectory(atPath: rawDirectory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}
let storeFixture = StoreFixture()

/// Entries in the sweep directory: 100,000 unless WEBIMAGE_BENCH_SWEEP_ENTRIES says otherwise.
let sweepEntries = Int(ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_SWEEP_ENTRIES"] ?? "") ?? 100_000

/// A directory of `sweepEntries` small entries, kept between the two sweep benchmarks' processes (run.sh
/// removes it at the end) because filling it takes seconds.
final class SweepFixture: Sendable {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "webimage-bench-sweep-\(sweepEntries)", isDirectory: true)
    let cache: DiskCache

    init() { cache = makeDiskCache(directory) }

    func fill() throws {
        if cache.totalCount() != sweepEntries {
            cache.removeAll()
            let entry = Data(repeating: 1, count: 200)
            for index in 0..<sweepEntries {
                try cache.storeData(entry, forKey: "https://example.com/sweep/\(index).jpg")
            }
        }
        let count = cache.totalCount()
        guard count == sweepEntries else {
            throw SetupFailure(description: "sweep directory holds \(count) entries, expected \(sweepEntries)")
        }
    }
}
let sweepFixture = SweepFixture()

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}
