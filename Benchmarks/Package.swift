// swift-tools-version:6.1
// Benchmarks for the WebImage SDK: a separate package so users never resolve ordo-one/benchmark.
// Every suite measures the SDK and a raw baseline (C libraries called directly, or plain Swift) in the same
// process with the same inputs; run.sh adds the out-of-process baselines (vips, Pillow, wrk, httpx) and prints
// the ratios. Build and run in release only (the benchmark plugin does).
import PackageDescription

let benchmarkPlugin: [Target.PluginUsage] = [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
let benchmark: Target.Dependency = .product(name: "Benchmark", package: "benchmark")

func sdk(_ names: String...) -> [Target.Dependency] {
    names.map { .product(name: $0, package: "WebImage") }
}

let package = Package(
    name: "WebImageBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "WebImage", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // The bare-client baseline of the HTTP rows (the versions the SDK resolves).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Raw C baselines: TurboJPEG, libpng, libdeflate, libwebp, giflib, the C thumbnail pipeline, raw file I/O.
        .target(
            name: "CBaselines",
            path: "Sources/CBaselines",
            linkerSettings: [
                .linkedLibrary("turbojpeg"), .linkedLibrary("png16"), .linkedLibrary("deflate"),
                .linkedLibrary("webp"), .linkedLibrary("gif"),
            ]
        ),
        // Inputs shared by the suites and by run.sh's external baselines.
        .target(
            name: "BenchSupport",
            dependencies: ["CBaselines"] + sdk("ImageCore"),
            path: "Sources/BenchSupport"
        ),
        // The exact process-CPU-time metric every suite records beside wall-clock time.
        .target(
            name: "BenchMetrics",
            dependencies: [benchmark],
            path: "Sources/BenchMetrics"
        ),
        // Raw libavif calls, the AVIF baseline (its own target so only the AVIF suite links libavif).
        .target(name: "CAVIFBaseline", path: "Sources/CAVIFBaseline", linkerSettings: [.linkedLibrary("avif")]),
        // Raw libheif and lcms2 calls, the HEIC and colour baselines (only the HEIF suite links them).
        .target(
            name: "CHEIFBaseline", path: "Sources/CHEIFBaseline",
            cSettings: [.unsafeFlags(["-I/usr/include/x86_64-linux-gnu", "-I/usr/include/aarch64-linux-gnu"])],
            linkerSettings: [.linkedLibrary("heif"), .linkedLibrary("lcms2")]),
        // Raw libjxl calls (djxl's decode loop, and the encoder that makes the inputs), the JPEG XL baseline.
        .target(name: "CJXLBaseline", path: "Sources/CJXLBaseline", linkerSettings: [.linkedLibrary("jxl")]),
        // Writes the benchmark inputs to a directory for vips / Pillow / nginx (run.sh calls it).
        .executableTarget(
            name: "ExportInputs",
            dependencies: ["BenchSupport", "CBaselines", "CAVIFBaseline"],
            path: "Sources/ExportInputs"
        ),
        // Profiling driver: the whole path and each raw stage against a server, for perf / callgrind (profile.sh).
        .executableTarget(
            name: "HTTPProfile",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CBaselines",
            ] + sdk("ImageCore", "HTTPLoader", "DiskCache", "MemoryCache", "JPEGCoder"),
            path: "Sources/HTTPProfile"
        ),
        // Instruction counts of the hot paths under callgrind, SDK beside its baseline (run.sh step 7).
        .executableTarget(
            name: "HotPathCounts",
            dependencies: ["BenchSupport", "CBaselines"]
                + sdk("ImageCore", "MemoryCache", "DiskCache", "JPEGCoder", "ImageTransformers"),
            path: "Sources/HotPathCounts"
        ),
        // The SDK side of the thumbnail rows: a long-lived process thumbnails.py drives between vipsthumbnail runs.
        .executableTarget(
            name: "ThumbnailRunner",
            dependencies: sdk("ImageCore", "JPEGCoder", "PNGCoder", "WebPCoder", "AVIFCoder", "ImageTransformers"),
            path: "Sources/ThumbnailRunner"
        ),
        // Issue 35 item 4: perceptual quality target vs fixed q 80, and the placeholders' cost (perceptual.sh).
        .executableTarget(
            name: "PerceptualRunner",
            dependencies: sdk(
                "ImageCore", "JPEGCoder", "PNGCoder", "WebPCoder", "AVIFCoder", "JXLCoder", "ImageTransformers"),
            path: "Sources/PerceptualRunner"
        ),
        // Issue 23 item 7: the peak resident set of 1,000 concurrent loads of distinct 2 MP photos (run.sh step 6).
        .executableTarget(
            name: "InFlightMemory",
            dependencies: sdk("ImageCore", "HTTPLoader", "MemoryCache", "JPEGCoder"),
            path: "Sources/InFlightMemory"
        ),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics"]
                + sdk("ImageCore", "MemoryCache", "ImageTransformers"),
            path: "Benchmarks/CoreBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "CoderBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CBaselines"]
                + sdk("ImageCore", "JPEGCoder", "PNGCoder", "WebPCoder", "GIFCoder", "ImageTransformers"),
            path: "Benchmarks/CoderBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CBaselines"]
                + sdk("ImageCore", "MemoryCache", "DiskCache"),
            path: "Benchmarks/CacheBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "TransformBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CBaselines"] + sdk("ImageCore", "ImageTransformers"),
            path: "Benchmarks/TransformBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "AVIFBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CAVIFBaseline"] + sdk("ImageCore", "AVIFCoder"),
            path: "Benchmarks/AVIFBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "HEIFBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CHEIFBaseline"]
                + sdk("ImageCore", "HEIFCoder", "ColorManagement"),
            path: "Benchmarks/HEIFBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "JXLBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics", "CJXLBaseline"] + sdk("ImageCore", "JXLCoder"),
            path: "Benchmarks/JXLBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "APNGBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics"] + sdk("ImageCore", "PNGCoder"),
            path: "Benchmarks/APNGBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "HTTPBenchmarks",
            dependencies: [
                benchmark, "BenchSupport", "BenchMetrics",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ] + sdk("ImageCore", "HTTPLoader", "MemoryCache", "DiskCache", "JPEGCoder"),
            path: "Benchmarks/HTTPBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "RedisBenchmarks",
            dependencies: [benchmark, "BenchSupport", "BenchMetrics"]
                + sdk("ImageCore", "MemoryCache", "RedisCache", "JPEGCoder"),
            path: "Benchmarks/RedisBenchmarks",
            plugins: benchmarkPlugin
        ),
    ],
    swiftLanguageModes: [.v6]
)
