import BenchMetrics
import BenchSupport
import Benchmark
import Foundation
import GIFCoder
import ImageCore
import ImageTransformers
import JPEGCoder
import PNGCoder
import WebPCoder

// Issue 3: full decode (through a `CodersManager`, as a load decodes) and encode per format and size, SDK against
// the raw C call on the same bytes; and the 12 MP JPEG → 256 px JPEG thumbnail, SDK against the same pipeline in C
// and against an SDK full decode + resize.

func coder(_ format: CoderFormat) -> any ImageCoder {
    switch format {
    case .jpeg: JPEGCoder.shared
    case .png: PNGCoder.shared
    case .webp: WebPCoder.shared
    case .gif: GIFCoder.shared
    }
}

func imageFormat(_ format: CoderFormat) -> ImageFormat {
    switch format {
    case .jpeg: .jpeg
    case .png: .png
    case .webp: .webp
    case .gif: .gif
    }
}

func configuration(_ size: CoderSize) -> Benchmark.Configuration {
    switch size {
    case .mp12:
        .init(
            metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
            timeUnits: .nanoseconds, units: rawCountUnits(),
            warmupIterations: 1, maxDuration: .seconds(3), maxIterations: 8)
    case .mp2:
        .init(
            metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
            units: rawCountUnits(),
            warmupIterations: 2,
            maxDuration: .milliseconds(1500), maxIterations: 40)
    case .small:
        .init(
            metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
            units: rawCountUnits(),
            warmupIterations: 5,
            maxDuration: .seconds(1), maxIterations: 400)
    }
}

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

let benchmarks: @Sendable () -> Void = {
    for format in CoderFormat.allCases {
        for size in CoderSize.allCases {
            let name = "\(format.rawValue)_\(size.rawValue)"
            let config = configuration(size)
            let sdk = coder(format)
            // Decodes go through a registry, as every load's do: the probe that picks the coder is part of the cost.
            let registry = CodersManager(coders: [sdk])

            Benchmark("\(name)_decode_SDK", configuration: config) { benchmark in
                let data = CoderInputs.data(format, size)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                blackHole(try registry.decode(data, options: ImageDecodeOptions()))
                cpu.stop(benchmark)
            } setup: {
                // Also proves the SDK decodes to the size and layout the C baseline produces.
                let image = try registry.decode(CoderInputs.data(format, size), options: ImageDecodeOptions())
                let expected = size.pixels
                let channels = image.pixels.layout.bytesPerPixel
                guard image.width == expected.width, image.height == expected.height,
                    channels == format.decodedChannels
                else {
                    throw SetupFailure(
                        description: "\(name): SDK decoded \(image.width)x\(image.height)x\(channels), expected "
                            + "\(expected.width)x\(expected.height)x\(format.decodedChannels)")
                }
            }

            Benchmark("\(name)_decode_C", configuration: config) { benchmark in
                let data = CoderInputs.data(format, size)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                blackHole(CBaseline.decode(format, data))
                cpu.stop(benchmark)
            } setup: {
                _ = CoderInputs.data(format, size)
            }

            if format == .jpeg {
                let reused = CBaseline.ReusedJPEGDecoder()
                Benchmark("\(name)_decode_Creused", configuration: config) { benchmark in
                    let data = CoderInputs.data(format, size)
                    benchmark.startMeasurement()
                    let cpu = CPUClock.start()
                    blackHole(reused.decode(data))
                    cpu.stop(benchmark)
                } setup: {
                    _ = reused.decode(CoderInputs.data(format, size))
                }
            }

            let encodeOptions = ImageEncodeOptions(quality: 0.85)
            Benchmark("\(name)_encode_SDK", configuration: config) { benchmark in
                let image = CoderInputs.encodeInput(format, size)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                blackHole(try sdk.encode(image, as: imageFormat(format), options: encodeOptions))
                cpu.stop(benchmark)
            } setup: {
                _ = CoderInputs.encodeInput(format, size)
            }

            Benchmark("\(name)_encode_C", configuration: config) { benchmark in
                let pixels = CoderInputs.encodePixels(format, size)
                benchmark.startMeasurement()
                let cpu = CPUClock.start()
                blackHole(CBaseline.encode(format, pixels))
                cpu.stop(benchmark)
            }
        }
    }

    registerThumbnailBenchmarks()
    registerPNGStageBenchmarks()
}

/// The 12 MP → 256 px JPEG thumbnail, three ways.
func registerThumbnailBenchmarks() {
    let config = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident], timeUnits: .nanoseconds,
        units: rawCountUnits(),
        warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 40)
    let side = 256
    let fit = ResizeTransformer(width: side, height: side, mode: .aspectFit)
    let encodeOptions = ImageEncodeOptions(quality: 0.85)
    let thumbnailOptions = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: side, height: side))

    @Sendable func sdkThumbnail(_ data: Data) throws -> Data {
        var image = try JPEGCoder.shared.decode(data, options: thumbnailOptions)
        let target = fit.outputSize(for: PixelSize(width: image.width, height: image.height))
        if target.width != image.width || target.height != image.height {
            image = try fit.transform(image, forKey: "")
        }
        return try JPEGCoder.shared.encode(image, as: .jpeg, options: encodeOptions)
    }

    Benchmark("Thumb_12MP_to256_SDK", configuration: config) { benchmark in
        let data = Inputs.photo12MPJPEG
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try sdkThumbnail(data))
        cpu.stop(benchmark)
    } setup: {
        let thumbnail = try JPEGCoder.shared.decode(
            try sdkThumbnail(Inputs.photo12MPJPEG), options: ImageDecodeOptions())
        let c = CBaseline.thumbnail(Inputs.photo12MPJPEG, side: side)
        guard thumbnail.width == c.width, thumbnail.height == c.height else {
            throw SetupFailure(
                description: "SDK thumbnail is \(thumbnail.width)x\(thumbnail.height), C is \(c.width)x\(c.height)")
        }
    }

    Benchmark("Thumb_12MP_to256_C", configuration: config) { benchmark in
        let data = Inputs.photo12MPJPEG
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(CBaseline.thumbnail(data, side: side))
        cpu.stop(benchmark)
    }

    Benchmark("Thumb_12MP_to256_SDKfullDecodeResize", configuration: config) { benchmark in
        let data = Inputs.photo12MPJPEG
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        let image = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        let small = try fit.transform(image, forKey: "")
        blackHole(try JPEGCoder.shared.encode(small, as: .jpeg, options: encodeOptions))
        cpu.stop(benchmark)
    }
}
