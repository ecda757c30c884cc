import BenchMetrics
import BenchSupport
import Benchmark
import Foundation
import ImageCore
import PNGCoder

// Issue 24: APNG decode of every frame through PNGCoder (libpng fed one frame at a time, the SDK's compositor)
// against Pillow loading every frame of the same file (run.sh). The files are written by Pillow's APNG encoder
// (apng_pillow.py make), so neither side decodes its own encoder's output: 60 frames of 480x270 cut from the
// benchmark photo, with a moving square. `rgb_source`: RGB, blend op source, the photo still, so Pillow stores each
// later frame as the rectangle that changed; `rgba_over`: RGBA, the crop sliding, every frame whole, blend op over.

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

let benchmarks: @Sendable () -> Void = {
    guard let directory = ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_APNG_DIR"] else {
        FileHandle.standardError.write(
            Data(
                "APNGBenchmarks: WEBIMAGE_BENCH_APNG_DIR not set (apng_pillow.py writes the inputs); use run.sh\n".utf8)
        )
        return
    }
    let config = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 2, maxDuration: .seconds(4), maxIterations: 40)
    let all = ImageDecodeOptions(preloadAllFrames: true)
    for label in ["rgb_source", "rgba_over"] {
        let url = URL(fileURLWithPath: directory).appendingPathComponent("\(label).png")
        // Every frame on demand, the SDK's default: the first frame plus a provider; each frame is read once and
        // dropped, as a player or a per-frame transcoder would.
        Benchmark("APNG_\(label)_decodeOnDemand_SDK", configuration: config) { benchmark in
            let data = try Data(contentsOf: url)
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            let image = try CodersManager.decode(data, with: PNGCoder.shared, options: ImageDecodeOptions())
            for index in 0..<image.frameCount { blackHole(try image.frame(at: index)) }
            cpu.stop(benchmark)
        }

        // Every frame held at once (`.preloadAllFrames`).
        Benchmark("APNG_\(label)_decode_SDK", configuration: config) { benchmark in
            let data = try Data(contentsOf: url)
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(try CodersManager.decode(data, with: PNGCoder.shared, options: all))
            cpu.stop(benchmark)
        } setup: {
            let image = try CodersManager.decode(Data(contentsOf: url), with: PNGCoder.shared, options: all)
            guard image.frameCount == 60, image.width == 480, image.height == 270 else {
                throw SetupFailure(description: "\(label): decoded \(image), expected 480x270 × 60")
            }
        }
    }
}
