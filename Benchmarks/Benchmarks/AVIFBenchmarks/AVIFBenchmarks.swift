import AVIFCoder
import BenchMetrics
import BenchSupport
import Benchmark
import CAVIFBaseline
import Foundation
import ImageCore
import Synchronization

// Issue 12: decode and encode of a 2 MP AVIF (the 1920x1080 crop of the benchmark photo), AVIFCoder against
// the raw libavif calls with the same settings (one thread, 8-bit RGB, quantizer 9 = quality 0.85, 4:2:0) on the
// same bytes. run.sh adds Pillow's AVIF plugin (a newer libavif from PyPI) on the same file.

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

/// The AVIF input: the 2 MP photo through the C encoder at speed 6, quantizer 9, built once per process and
/// byte for byte the file ExportInputs writes for Pillow (`photo2mp.avif`).
enum AVIFInputs {
    private static let cache = Mutex<Data?>(nil)

    static var photo2MP: Data {
        if let data = cache.withLock({ $0 }) { return data }
        let pixels = Inputs.photo2MP
        var bytes: UnsafeMutablePointer<UInt8>?
        let size = pixels.bytes.withUnsafeBufferPointer {
            cb_avif_encode($0.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, 9, 6, &bytes)
        }
        precondition(size > 0 && bytes != nil, "cb_avif_encode failed")
        defer { free(bytes) }
        let data = Data(bytes: bytes!, count: size)
        cache.withLock { $0 = data }
        return data
    }

    static let image2MP: Image = {
        let pixels = Inputs.photo2MP
        return Image(
            pixels: PixelBuffer(width: pixels.width, height: pixels.height, layout: .rgb8, bytes: pixels.bytes))
    }()
}

func cDecode(_ data: Data) -> (checksum: UInt32, width: Int, height: Int) {
    var checksum: UInt32 = 0
    var width: Int32 = 0
    var height: Int32 = 0
    let status = data.withUnsafeBytes { raw in
        cb_avif_decode(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, 3, &checksum, &width, &height)
    }
    precondition(status == 0, "cb_avif_decode failed")
    return (checksum, Int(width), Int(height))
}

func cEncode(_ pixels: Pixels, speed: Int32) -> Int {
    let size = pixels.bytes.withUnsafeBufferPointer {
        cb_avif_encode($0.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, 9, speed, nil)
    }
    precondition(size > 0, "cb_avif_encode failed")
    return size
}

let benchmarks: @Sendable () -> Void = {
    let decodeConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 40)
    let encodeConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 8)

    Benchmark("AVIF_2MP_decode_SDK", configuration: decodeConfig) { benchmark in
        let data = AVIFInputs.photo2MP
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try AVIFCoder.shared.decode(data, options: ImageDecodeOptions()))
        cpu.stop(benchmark)
    } setup: {
        let data = AVIFInputs.photo2MP
        let image = try AVIFCoder.shared.decode(data, options: ImageDecodeOptions())
        let c = cDecode(data)
        guard image.width == c.width, image.height == c.height, image.pixels.layout == .rgb8 else {
            throw SetupFailure(description: "SDK decoded \(image), C \(c.width)x\(c.height) RGB")
        }
    }

    Benchmark("AVIF_2MP_decode_C", configuration: decodeConfig) { benchmark in
        let data = AVIFInputs.photo2MP
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(cDecode(data))
        cpu.stop(benchmark)
    } setup: {
        _ = AVIFInputs.photo2MP
    }

    for (label, effort, speed) in [("fast", EncodeEffort.fast, Int32(10)), ("balanced", .balanced, 6)] {
        let options = ImageEncodeOptions(quality: 0.85, effort: effort)
        Benchmark("AVIF_2MP_encode_\(label)_SDK", configuration: encodeConfig) { benchmark in
            let image = AVIFInputs.image2MP
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(try AVIFCoder.shared.encode(image, as: .avif, options: options))
            cpu.stop(benchmark)
        } setup: {
            _ = AVIFInputs.image2MP
        }

        Benchmark("AVIF_2MP_encode_\(label)_C", configuration: encodeConfig) { benchmark in
            let pixels = Inputs.photo2MP
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(cEncode(pixels, speed: speed))
            cpu.stop(benchmark)
        } setup: {
            _ = Inputs.photo2MP
        }
    }
}
