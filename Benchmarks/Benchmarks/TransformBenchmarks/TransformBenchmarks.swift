import BenchMetrics
import BenchSupport
import Benchmark
import CBaselines
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
/// The 2 MP photo at 720x480 in RGB: what a 1920x1280 JPEG decodes to at libjpeg-turbo's 3/8 scale (made on first
/// use, like the inputs above, so runs of other rows don't pay for it).
let rgbReduceInput: PixelBuffer = {
    let rgb = Inputs.photo2MP.image.pixels
    let reduced = rgb.areaResampled(width: 720, height: 480)
    return PixelBuffer(width: 720, height: 480, layout: .rgb8, bytes: Array(reduced.bytes))
}()

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

    // The exact step after a JPEG's DCT-scaled decode: a 1920x1280 photo decodes at 3/8 (720x480), which the area
    // reduce brings to the 512 px fit (the ThumbnailServer's JPEG request), beside the C area resize on the same
    // pixels. RGB, as JPEG decodes.
    Benchmark("Transform_areaReduce_720x480_to512_SDK", configuration: config) { benchmark in
        let cpu = CPUClock.start()
        blackHole(rgbReduceInput.areaResampled(width: 512, height: 341))
        cpu.stop(benchmark)
    } setup: {
        _ = rgbReduceInput
    }
    Benchmark("Transform_areaReduce_720x480_to512_C", configuration: config) { benchmark in
        var out = [UInt8](repeating: 0, count: 512 * 341 * 3)
        let source = Array(rgbReduceInput.bytes)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        source.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                cb_area_resize(src.baseAddress, 720, 480, dst.baseAddress, 512, 341, 3)
            }
        }
        cpu.stop(benchmark)
        blackHole(out)
    } setup: {
        _ = rgbReduceInput
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
