import AsyncHTTPClient
import BenchMetrics
import BenchSupport
import Benchmark
import DiskCache
import Dispatch
import Foundation
import HTTPLoader
import ImageCore
import JPEGCoder
import MemoryCache
import NIOCore
import Synchronization

// Issue 5: images from a local nginx (run.sh starts it and exports WEBIMAGE_BENCH_HTTP_BASE): 1,000 small images
// and 100 2 MP images at concurrency 6 and 64; the loader alone (bytes only) and the whole manager path (fetch,
// decode, store in memory + disk). wrk and a Python httpx + Pillow client run against the same server in run.sh.
// Issue 10: 200 camera-like photos (30–200 KB) beside them, and for every loader row the baseline of what the
// loader adds on top of its client: bare AsyncHTTPClient (`HTTPClient.execute`, bytes only, same concurrency,
// same client configuration) in the same run.

/// Counts completions and bytes, and wakes the waiter when all arrived.
final class BatchCounter: Sendable {
    let done = DispatchSemaphore(value: 0)
    let remaining: Atomic<Int>
    let failures = Atomic<Int>(0)
    let bytes = Atomic<Int>(0)
    let firstError = Mutex<String?>(nil)

    init(_ count: Int) { remaining = Atomic(count) }

    func finish(bytes count: Int, error: ImageError?) {
        bytes.add(count, ordering: .relaxed)
        if let error {
            failures.add(1, ordering: .relaxed)
            firstError.withLock { $0 = $0 ?? "\(error)" }
        }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }

    /// Reports failed loads as a benchmark error.
    func check(_ benchmark: Benchmark) {
        let failed = failures.load(ordering: .relaxed)
        if failed > 0 {
            benchmark.error("\(failed) loads failed, first: \(firstError.withLock { $0 } ?? "?")")
        }
    }
}

/// One loader per benchmark process (each benchmark runs in its own process), kept across iterations so
/// connections stay open, as wrk's do.
let loaders = Mutex<[Int: HTTPLoader]>([:])
func loader(concurrency: Int) -> HTTPLoader {
    loaders.withLock { cache in
        if let existing = cache[concurrency] { return existing }
        var configuration = HTTPLoaderConfiguration()
        configuration.maxConcurrentDownloads = concurrency
        configuration.timeout = 30
        let made = HTTPLoader(configuration: configuration)
        cache[concurrency] = made
        return made
    }
}

/// One bare AsyncHTTPClient per benchmark process, configured like the loader's own client.
let bareClient = Mutex<HTTPClient?>(nil)
func bareClient(concurrency: Int) -> HTTPClient {
    bareClient.withLock { existing in
        if let existing { return existing }
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: .seconds(30), read: .seconds(30)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, concurrency)
        let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        existing = made
        return made
    }
}

/// Collects a response body, as the loader does, and nothing else.
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

/// Runs `urls` through `client.execute` with at most `concurrency` requests in flight (the loader's queue does
/// the same for the SDK rows); each completion starts the next request on the event loop that finished.
func runBare(_ urls: [URL], client: HTTPClient, concurrency: Int, counter: BatchCounter) {
    let next = Atomic<Int>(0)
    @Sendable func startNext() {
        let index = next.add(1, ordering: .relaxed).oldValue
        guard index < urls.count else { return }
        do {
            let request = try HTTPClient.Request(url: urls[index])
            client.execute(request: request, delegate: BodyCollector()).futureResult.whenComplete { result in
                switch result {
                case .success(let bytes): counter.finish(bytes: bytes, error: nil)
                case .failure(let error):
                    counter.finish(bytes: 0, error: ImageError(.downloadFailed, stage: .download, message: "\(error)"))
                }
                startNext()
            }
        } catch {
            counter.finish(bytes: 0, error: ImageError(.invalidURL, stage: .request, message: "\(error)"))
            startNext()
        }
    }
    for _ in 0..<min(concurrency, urls.count) { startNext() }
}

/// Cache folders of the manager rows' iterations, removed when the benchmark ends.
let usedCacheDirectories = Mutex<[URL]>([])

func temporaryCacheDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent(
        "webimage-bench-http-\(getpid())-\(UUID().uuidString)", isDirectory: true)
}

let benchmarks: @Sendable () -> Void = {
    let sets: [(label: String, urls: [String], config: Benchmark.Configuration)] = [
        (
            "small1000", (0..<Inputs.httpSmallCount).map(Inputs.httpSmallPath),
            .init(
                metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .custom("bytes")],
                timeUnits: .nanoseconds, units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(3),
                maxIterations: 15)
        ),
        (
            "photo200", (0..<Inputs.httpPhotoCount).map(Inputs.httpPhotoPath),
            .init(
                metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .custom("bytes")],
                timeUnits: .nanoseconds, units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(3),
                maxIterations: 15)
        ),
        (
            "2MP100", (0..<Inputs.httpLargeCount).map(Inputs.httpLargePath),
            .init(
                metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .custom("bytes")],
                timeUnits: .nanoseconds, units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(4),
                maxIterations: 8)
        ),
    ]

    // Decode time of one served image, for the decode-bound limit (cores ÷ decode time).
    let decodeConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal], timeUnits: .nanoseconds, units: rawCountUnits(),
        warmupIterations: 3,
        maxDuration: .seconds(1), maxIterations: 200)
    Benchmark("HTTP_small1000_decodeOne_SDK", configuration: decodeConfig) { benchmark in
        let data = Inputs.httpSmallImage(0)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try JPEGCoder.shared.decode(data, options: ImageDecodeOptions()))
        cpu.stop(benchmark)
    }
    Benchmark("HTTP_photo200_decodeOne_SDK", configuration: decodeConfig) { benchmark in
        let data = Inputs.httpPhotoImage(0)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try JPEGCoder.shared.decode(data, options: ImageDecodeOptions()))
        cpu.stop(benchmark)
    }
    Benchmark("HTTP_2MP100_decodeOne_SDK", configuration: decodeConfig) { benchmark in
        let data = Inputs.httpLargeImage(0)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try JPEGCoder.shared.decode(data, options: ImageDecodeOptions()))
        cpu.stop(benchmark)
    }

    guard let base = ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_HTTP_BASE"].flatMap({ URL(string: $0) })
    else {
        FileHandle.standardError.write(
            Data("HTTPBenchmarks: WEBIMAGE_BENCH_HTTP_BASE not set; only the decode rows run (use run.sh)\n".utf8))
        return
    }

    for set in sets {
        let urls = set.urls.map { base.appendingPathComponent($0) }
        for concurrency in [6, 64] {
            Benchmark("HTTP_\(set.label)_c\(concurrency)_loaderOnly", configuration: set.config) { benchmark in
                let loader = loader(concurrency: concurrency)
                let counter = BatchCounter(urls.count)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                for url in urls {
                    _ = loader.requestImage(with: url, options: [], context: ImageContext(), progress: nil) {
                        switch $0 {
                        case .success(let loaded): counter.finish(bytes: loaded.data.count, error: nil)
                        case .failure(let error): counter.finish(bytes: 0, error: error)
                        }
                    }
                }
                counter.done.wait()
                cpu.stop(benchmark)
                benchmark.stopMeasurement()
                benchmark.measurement(.custom("bytes"), counter.bytes.load(ordering: .relaxed))
                counter.check(benchmark)
            }

            Benchmark("HTTP_\(set.label)_c\(concurrency)_bareAHC", configuration: set.config) { benchmark in
                let client = bareClient(concurrency: concurrency)
                let counter = BatchCounter(urls.count)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                runBare(urls, client: client, concurrency: concurrency, counter: counter)
                counter.done.wait()
                cpu.stop(benchmark)
                benchmark.stopMeasurement()
                benchmark.measurement(.custom("bytes"), counter.bytes.load(ordering: .relaxed))
                counter.check(benchmark)
            }

            Benchmark("HTTP_\(set.label)_c\(concurrency)_managerPath", configuration: set.config) { benchmark in
                // A cold two-level cache per iteration; the loader (and its connections) is kept.
                let directory = temporaryCacheDirectory()
                let disk = DiskCache(
                    configuration: DiskCacheConfiguration(
                        directory: directory, maxDiskAge: nil, maxDiskSize: 0, sweepInterval: nil))
                let manager = ImageManager(
                    cache: CachesManager([MemoryCache(), disk]), loader: loader(concurrency: concurrency))
                let counter = BatchCounter(urls.count)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                for url in urls {
                    manager.loadImage(with: url, options: [.waitStoreCache]) { result in
                        switch result {
                        case .success(let value) where !value.isFinal: return
                        case .success(let value): counter.finish(bytes: value.data?.count ?? 0, error: nil)
                        case .failure(let error): counter.finish(bytes: 0, error: error)
                        }
                    }
                }
                counter.done.wait()
                cpu.stop(benchmark)
                benchmark.stopMeasurement()
                benchmark.measurement(.custom("bytes"), counter.bytes.load(ordering: .relaxed))
                counter.check(benchmark)
                let stored = disk.totalCount()
                if stored != urls.count {
                    benchmark.error("disk cache holds \(stored) entries, expected \(urls.count)")
                }
                // Removed in teardown, not here: ext4 makes files created soon after many deletions dearer, and
                // the Python baseline deletes nothing while it runs either.
                usedCacheDirectories.withLock { $0.append(directory) }
            } setup: {
                CodersManager.shared.addCoder(JPEGCoder.shared)
            } teardown: {
                let directories = usedCacheDirectories.withLock { directories in
                    defer { directories.removeAll() }
                    return directories
                }
                for directory in directories { try? FileManager.default.removeItem(at: directory) }
            }
        }
    }
}
