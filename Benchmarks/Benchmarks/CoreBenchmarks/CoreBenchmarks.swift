import BenchMetrics
import BenchSupport
import Benchmark
import Dispatch
import Foundation
import ImageCore
import ImageTransformers
import MemoryCache
import Synchronization

// Issue 2: the main line's overhead on a memory hit, and coalescing under 10,000 concurrent loads.

/// A scripted in-memory loader: answers every URL after `latency` with a ready-made image and counts requests.
final class ScriptedLoader: ImageLoader {
    let requests = Atomic<Int>(0)
    let image: Image
    let latency: DispatchTimeInterval

    init(image: Image, latency: DispatchTimeInterval) {
        self.image = image
        self.latency = latency
    }

    func canRequestImage(for url: URL) -> Bool { url.scheme == "bench" }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        requests.add(1, ordering: .relaxed)
        let operation = ScriptedOperation()
        let image = self.image
        DispatchQueue.global().asyncAfter(deadline: .now() + latency) {
            if operation.isCancelled {
                completion(.failure(ImageError(.cancelled, stage: .download)))
            } else {
                completion(
                    .success(LoadedImageData(data: Data([0]), response: ResponseMetadata(url: url), image: image)))
            }
        }
        return operation
    }
}

final class ScriptedOperation: ImageOperation {
    private let cancelled = Atomic<Bool>(false)
    func cancel() { cancelled.store(true, ordering: .relaxed) }
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}

/// Counts completions and wakes the waiter when all arrived.
final class CompletionCounter: Sendable {
    let done = DispatchSemaphore(value: 0)
    let remaining: Atomic<Int>
    let failures = Atomic<Int>(0)
    init(_ count: Int) { remaining = Atomic(count) }
    func complete(_ result: Result<ImageResult, ImageError>) {
        if case .success(let value) = result, !value.isFinal { return }
        if case .failure = result { failures.add(1, ordering: .relaxed) }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }
}

let smallImage = Pixels(
    width: 64, height: 64, channels: 4, bytes: [UInt8](repeating: 200, count: 64 * 64 * 4)
).image
let hitURL = URL(string: "bench://images/hit.png")!

let benchmarks: @Sendable () -> Void = {
    let perOp = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .mallocCountTotal], timeUnits: .nanoseconds, units: rawCountUnits(),
        warmupIterations: 3,
        scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 2_000)

    // The manager with MemoryCache as its cache; the URL is already cached, so loadImage answers from memory.
    let cache = MemoryCache()
    let manager = ImageManager(cache: cache, loader: ScriptedLoader(image: smallImage, latency: .milliseconds(1)))
    let key = manager.cacheKey(for: hitURL) ?? hitURL.absoluteString
    cache.setImage(smallImage, forKey: key)

    Benchmark("Core_memoryHit_managerLoadImage", configuration: perOp) { benchmark in
        let cpu = CPUClock.start()
        for _ in benchmark.scaledIterations {
            manager.loadImage(with: hitURL) { result in blackHole(result) }
        }
        cpu.stop(benchmark)
    } setup: {
        // The hit must complete synchronously from memory, or this row measures something else.
        let delivered = DeliveredCacheType()
        manager.loadImage(with: hitURL) { result in
            if case .success(let value) = result { delivered.value.withLock { $0 = value.cacheType } }
        }
        guard delivered.value.withLock({ $0 }) == .memory else {
            throw BenchmarkSetupError("loadImage did not answer synchronously from the memory cache")
        }
    }

    Benchmark(
        "Core_memoryHit_managerLoadImageAsync", configuration: perOp
    ) { benchmark in
        let cpu = CPUClock.start()
        for _ in benchmark.scaledIterations {
            blackHole(try? await manager.loadImage(with: hitURL))
        }
        cpu.stop(benchmark)
    }

    Benchmark("Core_memoryHit_bareMemoryCache", configuration: perOp) { benchmark in
        let cpu = CPUClock.start()
        for _ in benchmark.scaledIterations {
            blackHole(cache.image(forKey: key))
        }
        cpu.stop(benchmark)
    }

    // The same hit with a transformer in the context (what a thumbnail service always has): the key gains the
    // transformer's part and the extension, so the baseline is the bare lookup of that longer key.
    var transformed = ImageContext()
    transformed.imageTransformer = ResizeTransformer(width: 256, height: 256)
    let transformedKey = manager.cacheKey(for: hitURL, context: transformed) ?? hitURL.absoluteString
    cache.setImage(smallImage, forKey: transformedKey)

    Benchmark("Core_memoryHit_managerLoadImageTransformer", configuration: perOp) { benchmark in
        let cpu = CPUClock.start()
        for _ in benchmark.scaledIterations {
            manager.loadImage(with: hitURL, context: transformed) { result in blackHole(result) }
        }
        cpu.stop(benchmark)
    } setup: {
        let delivered = DeliveredCacheType()
        manager.loadImage(with: hitURL, context: transformed) { result in
            if case .success(let value) = result { delivered.value.withLock { $0 = value.cacheType } }
        }
        guard delivered.value.withLock({ $0 }) == .memory else {
            throw BenchmarkSetupError("loadImage with a transformer did not answer synchronously from memory")
        }
    }

    Benchmark("Core_memoryHit_bareMemoryCacheTransformedKey", configuration: perOp) { benchmark in
        let cpu = CPUClock.start()
        for _ in benchmark.scaledIterations {
            blackHole(cache.image(forKey: transformedKey))
        }
        cpu.stop(benchmark)
    }

    // 10,000 concurrent loads of 100 URLs through a fresh manager; the loader must see exactly 100 requests.
    let loads = 10_000
    let urls = (0..<100).map { URL(string: "bench://images/\($0).png")! }
    Benchmark(
        "Core_concurrentLoads_10000x100",
        configuration: .init(
            metrics: [
                .wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .custom("loaderRequests"),
            ],
            timeUnits: .nanoseconds, units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(6),
            maxIterations: 20)
    ) { benchmark in
        let loader = ScriptedLoader(image: smallImage, latency: .milliseconds(2))
        let fresh = ImageManager(cache: MemoryCache(), loader: loader)
        let counter = CompletionCounter(loads)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        for index in 0..<loads {
            fresh.loadImage(with: urls[index % urls.count]) { counter.complete($0) }
        }
        counter.done.wait()
        cpu.stop(benchmark)
        benchmark.stopMeasurement()
        let requests = loader.requests.load(ordering: .relaxed)
        benchmark.measurement(.custom("loaderRequests"), requests)
        if requests != urls.count || counter.failures.load(ordering: .relaxed) != 0 {
            let failed = counter.failures.load(ordering: .relaxed)
            let message =
                "ASSERTION FAILED: \(requests) loader requests (expected \(urls.count)), \(failed) failed loads"
            FileHandle.standardError.write(Data((message + "\n").utf8))
            benchmark.error(message)
        }
    }
}

/// Records which cache level answered a load.
final class DeliveredCacheType: Sendable {
    let value = Mutex<ImageCacheType?>(nil)
}

struct BenchmarkSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
