import BenchMetrics
import BenchSupport
import Benchmark
import Dispatch
import Foundation
import ImageCore
import JPEGCoder
import MemoryCache
import RedisCache
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue 11: a Redis hit (fetch, and fetch + decode) for run.sh to set beside `redis-benchmark` GETs of the same
// value size, and the origin requests / hit ratio of 2 and 3 replicas loading one URL list from a local origin
// server (run.sh's nginx) through one Redis, with fleet coalescing on and off, beside replicas with memory only.
// run.sh starts a redis-server and exports WEBIMAGE_BENCH_REDIS_URL (and WEBIMAGE_BENCH_HTTP_BASE for the
// origin); without them these benchmarks are not registered.

/// A count shared by the tasks and replicas of a fleet run (origin requests, failed loads).
final class RequestCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// One replica's origin client: plain HTTP GETs with no URL cache (so every load that reaches it is an origin
/// request), counted into `requests`, which the replicas of a fleet share.
final class OriginLoader: ImageLoader {
    let requests: RequestCounter
    let session: URLSession

    init(requests: RequestCounter) {
        self.requests = requests
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
    }

    func canRequestImage(for url: URL) -> Bool { url.scheme == "http" }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        requests.value.add(1, ordering: .relaxed)
        let task = session.dataTask(with: url) { data, response, error in
            if let error {
                completion(.failure(.wrap(error, as: .downloadFailed, stage: .download)))
                return
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard let data, status == 200 else {
                completion(.failure(.invalidDownloadStatusCode(status)))
                return
            }
            completion(
                .success(LoadedImageData(data: data, response: ResponseMetadata(url: url, contentType: "image/jpeg"))))
        }
        task.resume()
        return CancellableOperation { task.cancel() }
    }
}

func redisConfiguration(_ url: String, prefix: String, coalescing: Bool) -> RedisCacheConfiguration {
    // The URL comes from run.sh; a bad one is a broken run, not a measurement.
    var configuration = try! RedisCacheConfiguration(url: url)
    configuration.keyPrefix = prefix
    configuration.commandTimeout = 5
    configuration.connectTimeout = 5
    if coalescing { configuration.fleetCoalescing = .init(leaseDuration: 10, maxWait: 10, pollInterval: 0.002...0.02) }
    return configuration
}

/// How the replicas of a fleet share work.
enum FleetMode: String, CaseIterable {
    /// Each replica with its memory cache only: the baseline, every replica downloads every URL.
    case memoryOnly
    /// Each replica with its memory cache and a `RedisCache` on the shared Redis, fleet coalescing off.
    case redis
    /// As `redis`, with fleet coalescing on (one replica downloads a URL missed by several at once).
    case redisCoalescing
}

/// Loads every URL of `urls` on each of `replicas` managers at once (each replica its own memory cache, origin
/// client and, unless `memoryOnly`, `RedisCache`) and returns (origin requests, hit ratio in per mille, failed
/// loads).
func runFleet(replicas: Int, urls: [URL], mode: FleetMode, redisURL: String) async -> (Int, Int, Int) {
    // A fresh prefix per run, so every run starts with a cold Redis.
    let prefix = "bench-fleet-\(UInt64.random(in: 0...UInt64.max)):"
    let requests = RequestCounter()
    let failures = RequestCounter()
    let caches: [RedisCache?] = (0..<replicas).map { _ in
        mode == .memoryOnly
            ? nil
            : RedisCache(
                configuration: redisConfiguration(redisURL, prefix: prefix, coalescing: mode == .redisCoalescing))
    }
    let managers = caches.map { redis in
        ImageManager(
            cache: CachesManager([MemoryCache()] + (redis.map { [$0 as any ImageCacheProtocol] } ?? [])),
            loader: OriginLoader(requests: requests))
    }
    var context = ImageContext()
    context.imageCoder = JPEGCoder.shared
    let contextCopy = context
    await withTaskGroup(of: Void.self) { group in
        for (index, manager) in managers.enumerated() {
            // Each replica walks the list from another place, as independent servers would.
            let start = index * urls.count / replicas
            let order = Array(urls[start...] + urls[..<start])
            for url in order {
                group.addTask {
                    do {
                        _ = try await manager.loadImage(with: url, options: [.waitStoreCache], context: contextCopy)
                    } catch {
                        failures.value.add(1, ordering: .relaxed)
                    }
                }
            }
        }
    }
    for cache in caches { cache?.shutdown() }
    let made = requests.value.load(ordering: .relaxed)
    let loads = replicas * urls.count
    return (made, (loads - made) * 1000 / loads, failures.value.load(ordering: .relaxed))
}

let benchmarks: @Sendable () -> Void = {
    guard let redisURL = ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_REDIS_URL"] else {
        print("RedisBenchmarks: WEBIMAGE_BENCH_REDIS_URL not set (run.sh starts a redis-server); nothing registered")
        return
    }
    let perOp = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .custom("bytes")], timeUnits: .nanoseconds, units: rawCountUnits(),
        warmupIterations: 20, maxDuration: .seconds(3), maxIterations: 5_000)

    for (label, data) in [("small", Inputs.httpSmallImage(0)), ("2MP", Inputs.httpLargeImage(0))] {
        let cache = RedisCache(configuration: redisConfiguration(redisURL, prefix: "bench-hit:", coalescing: false))
        let key = "bench://origin/\(label).jpg"
        let stored = DispatchSemaphore(value: 0)
        cache.store(
            nil, data: data, metadata: CacheEntryMetadata(contentType: "image/jpeg"), forKey: key, cacheType: .disk
        ) {
            _ in stored.signal()
        }
        stored.wait()
        // run.sh reads the stored values' sizes (STRLEN: entry header plus these bytes) for redis-benchmark.
        let valueSize = data.count

        Benchmark("Redis_hit_\(label)_fetch", configuration: perOp) { benchmark in
            let cpu = CPUClock.start()
            for _ in benchmark.scaledIterations {
                let hit = try? await cache.queryImage(forKey: key, cacheType: .disk)
                blackHole(hit?.data?.count)
            }
            cpu.stop(benchmark)
            benchmark.measurement(.custom("bytes"), valueSize)
        }
        Benchmark("Redis_hit_\(label)_fetchDecode", configuration: perOp) { benchmark in
            let cpu = CPUClock.start()
            for _ in benchmark.scaledIterations {
                if let hit = try? await cache.queryImage(forKey: key, cacheType: .disk), let bytes = hit.data {
                    blackHole(try? JPEGCoder.shared.decode(bytes, options: ImageDecodeOptions()))
                }
            }
            cpu.stop(benchmark)
            benchmark.measurement(.custom("bytes"), valueSize)
        }
    }

    // Fleet: 200 distinct URLs on the local origin, 2 and 3 replicas, memory only / Redis / Redis + coalescing.
    guard let base = ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_HTTP_BASE"].flatMap({ URL(string: $0) })
    else {
        print("RedisBenchmarks: WEBIMAGE_BENCH_HTTP_BASE not set (run.sh starts nginx); fleet rows not registered")
        return
    }
    let fleet = Benchmark.Configuration(
        metrics: [.wallClock, .custom("loaderRequests"), .custom("hitRatioPermille")], timeUnits: .milliseconds,
        units: rawCountUnits().merging([.custom("hitRatioPermille"): .count]) { $1 }, warmupIterations: 1,
        maxDuration: .seconds(10), maxIterations: 5)
    let urls = (0..<200).map { base.appendingPathComponent(Inputs.httpSmallPath($0)) }
    for replicas in [2, 3] {
        for mode in FleetMode.allCases {
            Benchmark("Redis_fleet_\(replicas)replicas_\(mode.rawValue)", configuration: fleet) { benchmark in
                let (requests, ratio, failed) = await runFleet(
                    replicas: replicas, urls: urls, mode: mode, redisURL: redisURL)
                if failed > 0 { benchmark.error("\(failed) fleet loads failed") }
                benchmark.measurement(.custom("loaderRequests"), requests)
                benchmark.measurement(.custom("hitRatioPermille"), ratio)
            }
        }
    }
}
