import BenchMetrics
import BenchSupport
import Benchmark
import ImageCore
import ImageTransformers

// Issue 6: resize a 12 MP RGBA image to fit 256x256 and 1920x1080 (Lanczos-3), blur a 2 MP RGBA image.
// The same pixels are exported by ExportInputs for vips and Pillow, which run.sh times out of process.

/// Gaussian σ of the blur row (Pillow's `GaussianBlur(radius)` and vips' `gaussblur sigma` mean the same).
let blurSigma = 8.0

/// The 12 MP photo as RGBA (straight alpha, opaque).
let rgba12MP: Image = Inputs.photo12MP.rgba().image
/// The 1920x1080 crop as RGBA.
let rgba2MP: Image = Inputs.photo2MP.rgba().image

let benchmarks: @Sendable () -> Void = {
    let config = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident], timeUnits: .nanoseconds,
        units: rawCountUnits(),
        warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 30)

    for (label, width, height) in [("fit256", 256, 256), ("fit1920x1080", 1920, 1080)] {
        let resize = ResizeTransformer(width: width, height: height, mode: .aspectFit, filter: .lanczos3)
        Benchmark("Transform_resize_12MP_\(label)_SDK", configuration: config) { benchmark in
            let cpu = CPUClock.start()
            blackHole(try resize.transform(rgba12MP, forKey: ""))
            cpu.stop(benchmark)
        } setup: {
            _ = rgba12MP
        }
    }

    let blur = BlurTransformer(radius: blurSigma)
    Benchmark("Transform_blur_2MP_sigma8_SDK", configuration: config) { benchmark in
        let cpu = CPUClock.start()
        blackHole(try blur.transform(rgba2MP, forKey: ""))
        cpu.stop(benchmark)
    } setup: {
        _ = rgba2MP
    }
}
