import Dispatch
import Foundation
import HTTPLoader
import ImageCore
import JPEGCoder
import MemoryCache
import Synchronization

// Issue 23 item 7, memory for in-flight work: `InFlightMemory <base URL> [loads] [cache MB]` starts `loads`
// (default 1,000) loads of distinct 2 MP photos at once through an `ImageManager` with a `MemoryCache` of
// `cache MB` (default 256) and the default `HTTPLoader`, drops every image it is given, and prints one JSON line:
// the process's peak resident set (VmHWM, reset after setup through /proc/self/clear_refs, so it is this run's
// peak and nothing before it), the resident set before the loads, and what the cache holds at the end.
//
// The 100 photos of run.sh's `large/` set are requested under 10 distinct query strings each (nginx ignores the
// query), so every load is its own cache key, download and decode: a decoded 2 MP image is 8 MB, 1,000 of them
// are 8 GB, the cache keeps 32; what the process holds beyond that is the work in flight.

let arguments = CommandLine.arguments
// PIXELPOOL_SMALL_PAGES=1: pixel blocks in 4 KiB pages (`PixelPool.usesHugePages` off), what huge pages save.
if ProcessInfo.processInfo.environment["PIXELPOOL_SMALL_PAGES"] != nil { PixelPool.shared.usesHugePages = false }
guard arguments.count >= 2, let base = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: InFlightMemory <base URL> [loads] [cache MB]\n".utf8))
    exit(64)
}
let loads = arguments.count > 2 ? Int(arguments[2]) ?? 1_000 : 1_000
let cacheMB = arguments.count > 3 ? Int(arguments[3]) ?? 256 : 256

/// glibc's `malloc_trim` (not in the Glibc module's headers): returns freed heap memory to the system, which
/// tells memory still held by live objects from memory the allocator kept.
@_silgen_name("malloc_trim") func mallocTrim(_ pad: Int) -> Int32

/// A field of /proc/self/status in kB (VmRSS, VmHWM).
@Sendable func statusKB(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? -1
    }
    return -1
}

/// Resets VmHWM to the current resident set (Linux 4.0+), so the peak read later is this run's.
func resetPeak() -> Bool {
    let fd = open("/proc/self/clear_refs", O_WRONLY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return write(fd, "5", 1) == 1
}

final class Batch: Sendable {
    let done = DispatchSemaphore(value: 0)
    let remaining: Atomic<Int>
    let failures = Atomic<Int>(0)
    let firstError = Mutex<String?>(nil)
    init(_ count: Int) { remaining = Atomic(count) }
    func finish(_ error: ImageError?) {
        if let error {
            failures.add(1, ordering: .relaxed)
            firstError.withLock { $0 = $0 ?? "\(error)" }
        }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }
}

CodersManager.shared.addCoder(JPEGCoder.shared)
let cache = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: cacheMB << 20))
let manager = ImageManager(cache: cache, loader: HTTPLoader())
// INFLIGHT_DOWNLOADS_AHEAD changes the bound on downloads ahead of the decoder (default 64; `max` for none).
if let ahead = ProcessInfo.processInfo.environment["INFLIGHT_DOWNLOADS_AHEAD"] {
    manager.maxDownloadsAheadOfDecoding = ahead == "max" ? Int.max : Int(ahead) ?? manager.maxDownloadsAheadOfDecoding
}
let urls = (0..<loads).map { index in
    URL(
        string: base.appendingPathComponent(String(format: "large/%03d.jpg", index % 100)).absoluteString
            + "?copy=\(index / 100)")!
}

// One load first, so the loader's client, the coder and the pools exist before the peak is reset.
let warm = Batch(1)
manager.loadImage(with: base.appendingPathComponent("large/000.jpg"), options: [.waitStoreCache]) { result in
    switch result {
    case .success(let value) where !value.isFinal: return
    case .success: warm.finish(nil)
    case .failure(let error): warm.finish(error)
    }
}
warm.done.wait()
cache.removeAll()
let startKB = statusKB("VmRSS")
let peakReset = resetPeak()

let batch = Batch(loads)
if ProcessInfo.processInfo.environment["INFLIGHT_TRACE"] != nil {
    Thread.detachNewThread {
        while batch.remaining.load(ordering: .relaxed) > 0 {
            FileHandle.standardError.write(
                Data(
                    "rss \(statusKB("VmRSS") / 1024) MB, pending work \(WorkPool.cpu.pendingCount), remaining \(batch.remaining.load(ordering: .relaxed)), cache \(cache.totalCost >> 20) MB\n"
                        .utf8))
            usleep(100_000)
        }
    }
}
let started = ContinuousClock.now
for url in urls {
    manager.loadImage(with: url) { result in
        switch result {
        case .success(let value) where !value.isFinal: return
        case .success: batch.finish(nil)
        case .failure(let error): batch.finish(error)
        }
    }
}
batch.done.wait()
let elapsed = ContinuousClock.now - started
let peakKB = statusKB("VmHWM")
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let endKB = statusKB("VmRSS")
_ = mallocTrim(0)
let trimmedKB = statusKB("VmRSS")
let report: [String: Any] = [
    "end_rss_mb": Double(endKB) / 1024, "after_trim_rss_mb": Double(trimmedKB) / 1024,
    "loads": loads,
    "downloads_ahead": manager.maxDownloadsAheadOfDecoding == Int.max ? -1 : manager.maxDownloadsAheadOfDecoding,
    "failures": batch.failures.load(ordering: .relaxed),
    "first_error": batch.firstError.withLock { $0 } ?? "",
    "cache_limit_mb": cacheMB, "cache_cost_mb": Double(cache.totalCost) / 1_048_576,
    "start_rss_mb": Double(startKB) / 1024, "peak_rss_mb": Double(peakKB) / 1024,
    "peak_reset": peakReset, "seconds": seconds,
]
let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
