import AsyncHTTPClient
import CBaselines
import DiskCache
import Dispatch
import Foundation
import HTTPLoader
import ImageCore
import JPEGCoder
import MemoryCache
import NIOCore
import NIOHTTP1
import Synchronization

// A driver for profiling the whole path and each of its stages outside the benchmark harness (callgrind or
// perf): `HTTPProfile <mode> <base URL> <set: small|photo|large> <rounds> [concurrency]`. It runs the set `rounds`
// times (after one warm-up round) and prints images, bytes and process CPU time per image. Modes:
//   bare     AsyncHTTPClient `execute`, bytes only (the fetch stage's raw cost)
//   loader   HTTPLoader, bytes only
//   bareHeaders  bare, sending the loader's default headers (User-Agent, Accept): what they cost the client
//   loaderLazy   loader fed like bare (the next load when one completes): what the loader's queue of the whole
//                set costs (issue 23: neither explained the loader's excess; both measured within noise of
//                bare and loader)
//   manager  ImageManager: fetch, decode, memory + disk store (a cold MemoryCache + DiskCache each round; with
//            HTTPPROFILE_MEMORY_MB=N one MemoryCache of N MB kept across rounds, full after the warm-up round as a
//            running server's is, while every load of a round is still a download: each round asks for its URLs
//            with its own query (`?round=N`, which nginx ignores), so every store evicts an older image, and a
//            memory hit counts as a failure)
//   decode   raw TurboJPEG decode of the same bodies (fetched once), on as many threads as cores
//   store    raw write+rename of the same bodies into a fresh directory, as many writers as cores
//
//   valgrind --tool=callgrind --callgrind-out-file=loader.out .build/release/HTTPProfile loader http://… small 2
//   Benchmarks/profile.sh   (the per-stage table and the whole-path flame graph)

let arguments = CommandLine.arguments
// PIXELPOOL_SMALL_PAGES=1: pixel blocks in 4 KiB pages (`PixelPool.usesHugePages` off), what huge pages save.
if ProcessInfo.processInfo.environment["PIXELPOOL_SMALL_PAGES"] != nil { PixelPool.shared.usesHugePages = false }
guard arguments.count >= 5, let base = URL(string: arguments[2]), let rounds = Int(arguments[4]) else {
    FileHandle.standardError.write(
        Data("usage: HTTPProfile <mode> <base URL> <small|photo|large> <rounds> [c] (modes: see main.swift)\n".utf8)
    )
    exit(64)
}
let mode = arguments[1]
let concurrency = arguments.count > 5 ? Int(arguments[5]) ?? 6 : 6
let paths: [String] =
    switch arguments[3] {
    case "photo": (0..<200).map { "photo/\(String(format: "%03d", $0)).jpg" }
    case "large": (0..<100).map { "large/\(String(format: "%03d", $0)).jpg" }
    default: (0..<1000).map { "small/\(String(format: "%04d", $0)).jpg" }
    }
let urls = paths.map { base.appendingPathComponent($0) }

final class Batch: Sendable {
    let done = DispatchSemaphore(value: 0)
    let remaining: Atomic<Int>
    let bytes = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    init(_ count: Int) { remaining = Atomic(count) }
    func finish(_ count: Int?) {
        if let count { bytes.add(count, ordering: .relaxed) } else { failures.add(1, ordering: .relaxed) }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }
}

final class BodyCollector: HTTPClientResponseDelegate {
    typealias Response = Int
    // AsyncHTTPClient calls a delegate on one event loop; the (uncontended) lock keeps it Sendable, as the
    // loader's own delegate takes one per body part too.
    private let body = Mutex(ByteBuffer())
    func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
        body.withLock { body in
            var part = part
            body.writeBuffer(&part)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }
    func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { body.withLock { $0.readableBytes } }
}

func cpuNow() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

var configuration = HTTPLoaderConfiguration()
configuration.maxConcurrentDownloads = concurrency
configuration.timeout = 30
let loader = HTTPLoader(configuration: configuration)
var clientConfiguration = HTTPClient.Configuration(
    redirectConfiguration: .disallow,
    timeout: HTTPClient.Configuration.Timeout(connect: .seconds(30), read: .seconds(30)))
clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, concurrency)
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)

/// Threads for the decode and store modes, and the manager's work pool: HTTPPROFILE_THREADS, else the cores (the
/// thread-scaling rows of run.sh run 1 and 2).
let cores =
    ProcessInfo.processInfo.environment["HTTPPROFILE_THREADS"].flatMap { Int($0) }
    ?? ProcessInfo.processInfo.activeProcessorCount
let managerPool =
    ProcessInfo.processInfo.environment["HTTPPROFILE_THREADS"] == nil
    ? WorkPool.cpu : WorkPool(label: "profile.cpu", maxConcurrent: cores)
/// The manager mode's memory cache when HTTPPROFILE_MEMORY_MB is set: one cache of that many MB for every round.
let keptMemoryCache = ProcessInfo.processInfo.environment["HTTPPROFILE_MEMORY_MB"].flatMap { Int($0) }.map {
    MemoryCache(configuration: MemoryCacheConfiguration(costLimit: $0 << 20))
}
/// Rounds run so far (the kept memory cache's rounds ask for distinct URLs).
nonisolated(unsafe) var roundNumber = 0
/// The bodies of the set, fetched by the warm-up round of the `decode` and `store` modes.
let bodies = Mutex<[Data]>([])

/// Runs `count` jobs on as many threads as cores (thread `t` takes jobs `t, t + cores, …`).
func onCores(_ count: Int, _ body: @Sendable (Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: cores) { thread in
        var index = thread
        while index < count {
            body(index)
            index += cores
        }
    }
}

/// Diagnosis only (`bareHeaders`): the bare client sending the loader's default headers (User-Agent, Accept).
let bareHeaders: HTTPHeaders = {
    var headers = HTTPHeaders()
    if mode == "bareHeaders" {
        for (name, value) in loader.httpHeaders { headers.add(name: name, value: value) }
    }
    return headers
}()

func fetchBare(_ batch: Batch, keep: Bool) {
    let next = Atomic<Int>(0)
    @Sendable func startNext() {
        let index = next.add(1, ordering: .relaxed).oldValue
        guard index < urls.count else { return }
        let request = try! HTTPClient.Request(url: urls[index], headers: bareHeaders)
        if keep {
            client.execute(request: request).whenComplete { result in
                let body = (try? result.get()).flatMap { $0.body }.map { Data($0.readableBytesView) }
                if let body { bodies.withLock { $0.append(body) } }
                batch.finish(body?.count)
                startNext()
            }
        } else {
            client.execute(request: request, delegate: BodyCollector()).futureResult.whenComplete { result in
                batch.finish(try? result.get())
                startNext()
            }
        }
    }
    for _ in 0..<min(concurrency, urls.count) { startNext() }
}

/// Where the store and manager modes write: a fresh folder per round under HTTPPROFILE_DIR when set (kept: the
/// caller removes it after every mode has run, because ext4 makes a file created soon after many deletions dearer,
/// which would charge one mode for another's clean-up), else under the temporary directory, removed after the round.
let keptFilesRoot = ProcessInfo.processInfo.environment["HTTPPROFILE_DIR"].map { URL(fileURLWithPath: $0) }
func freshDirectory() -> URL {
    (keptFilesRoot ?? FileManager.default.temporaryDirectory).appendingPathComponent("webimage-profile-\(UUID())")
}
func discard(_ directory: URL) {
    if keptFilesRoot == nil { try? FileManager.default.removeItem(at: directory) }
}

func round(warmUp: Bool) -> Batch {
    let batch = Batch(urls.count)
    switch mode {
    case "bare", "bareHeaders":
        fetchBare(batch, keep: false)
    case "decode" where warmUp, "store" where warmUp:
        fetchBare(batch, keep: true)
    case "decode":
        let bodies = bodies.withLock { $0 }
        onCores(bodies.count) { index in
            var checksum: UInt32 = 0
            let status = bodies[index].withUnsafeBytes { bytes in
                cb_jpeg_decode_fresh(bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count, 3, 0, &checksum)
            }
            batch.finish(status == 0 ? bodies[index].count : nil)
        }
    case "store":
        let bodies = bodies.withLock { $0 }
        let directory = freshDirectory()
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        onCores(bodies.count) { index in
            let status = bodies[index].withUnsafeBytes { bytes in
                cb_write_rename(
                    directory.path, "entry-\(index)", bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
            }
            batch.finish(status == 0 ? bodies[index].count : nil)
        }
        discard(directory)
    case "manager":
        // A cold two-level cache per round, as the HTTP benchmark's manager row (or a kept memory cache, see
        // keptMemoryCache); the loader and its connections are kept.
        let directory = freshDirectory()
        let disk = DiskCache(
            configuration: DiskCacheConfiguration(
                directory: directory, maxDiskAge: nil, maxDiskSize: 0, sweepInterval: nil))
        let memory = keptMemoryCache ?? MemoryCache()
        let manager = ImageManager(cache: CachesManager([memory, disk]), loader: loader, workPool: managerPool)
        roundNumber += 1
        let roundURLs =
            keptMemoryCache == nil
            ? urls : urls.map { URL(string: $0.absoluteString + "?round=\(roundNumber)")! }
        for url in roundURLs {
            manager.loadImage(with: url, options: [.waitStoreCache]) { result in
                switch result {
                case .success(let value) where !value.isFinal: return
                case .success(let value) where value.cacheType != .none: batch.finish(nil)  // not a download
                case .success(let value): batch.finish(value.data?.count ?? 0)
                case .failure: batch.finish(nil)
                }
            }
        }
        batch.done.wait()
        discard(directory)
        return batch
    case "loaderLazy":
        // Diagnosis only: the loader fed like the bare client (the next request when one completes), so the
        // loader's queue never holds more than `concurrency` transfers.
        let next = Atomic<Int>(0)
        @Sendable func startNext() {
            let index = next.add(1, ordering: .relaxed).oldValue
            guard index < urls.count else { return }
            _ = loader.requestImage(with: urls[index], options: [], context: ImageContext(), progress: nil) { result in
                batch.finish(try? result.get().data.count)
                startNext()
            }
        }
        for _ in 0..<min(concurrency, urls.count) { startNext() }
    default:
        for url in urls {
            _ = loader.requestImage(with: url, options: [], context: ImageContext(), progress: nil) { result in
                batch.finish(try? result.get().data.count)
            }
        }
    }
    batch.done.wait()
    return batch
}

guard ["bare", "bareHeaders", "loader", "loaderLazy", "manager", "decode", "store"].contains(mode) else {
    FileHandle.standardError.write(Data("HTTPProfile: unknown mode \(mode)\n".utf8))
    exit(64)
}
if mode == "manager" { CodersManager.shared.addCoder(JPEGCoder.shared) }
let warmUp = round(warmUp: true)  // connections, lazy statics; the bodies for decode and store
if warmUp.failures.load(ordering: .relaxed) > 0 {
    FileHandle.standardError.write(Data("HTTPProfile: the warm-up round failed\n".utf8))
    exit(1)
}
let cpu = cpuNow()
let wallStart = ContinuousClock.now
var bytes = 0
var failures = 0
for _ in 0..<rounds {
    let batch = round(warmUp: false)
    bytes += batch.bytes.load(ordering: .relaxed)
    failures += batch.failures.load(ordering: .relaxed)
}
let elapsed = cpuNow() - cpu
let wall = ContinuousClock.now - wallStart
let requests = rounds * urls.count
print("\(mode): \(requests) images, \(bytes) bytes, \(failures) failures, CPU \(elapsed / requests) ns/image")
// Its own line: profile.sh reads the line above by its last fields.
let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
print("wall: \(Double(requests) / wallSeconds) images/s on \(cores) thread(s)")
try await loader.shutdown()
try await client.shutdown().get()
