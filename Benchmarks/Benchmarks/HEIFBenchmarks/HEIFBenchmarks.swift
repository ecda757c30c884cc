import BenchMetrics
import BenchSupport
import Benchmark
import CHEIFBaseline
import ColorManagement
import Foundation
import HEIFCoder
import ImageCore
import Synchronization

// Issue 24: HEIC decode and encode, HEIFCoder against the raw libheif calls with the same settings (tiles on the
// calling thread, 8-bit interleaved RGB, transforms applied; x265 quality 85, preset fast, 4:2:0) on the same
// bytes; and the sRGB conversion of 2 MP Display P3 pixels, LCMSColorConverter against a raw lcms2
// cmsDoTransform with a transform made once.

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

enum HEIFInputs {
    private static let cache = Mutex<Data?>(nil)

    /// The 2 MP photo as HEIC, written by the C baseline once per process.
    static var photo2MP: Data {
        if let data = cache.withLock({ $0 }) { return data }
        let pixels = Inputs.photo2MP
        var bytes: UnsafeMutablePointer<UInt8>?
        let size = pixels.bytes.withUnsafeBufferPointer {
            cb_heif_encode($0.baseAddress, Int32(pixels.width), Int32(pixels.height), &bytes)
        }
        precondition(size > 0 && bytes != nil, "cb_heif_encode failed")
        defer { free(bytes) }
        let data = Data(bytes: bytes!, count: size)
        cache.withLock { $0 = data }
        return data
    }

    /// A 12 MP iPhone photo (a grid of 512x512 tiles) from corpus-heic beside the photo corpus, when present.
    static let iPhone12MP: Data? = {
        let url = Corpus.root.deletingLastPathComponent()
            .appendingPathComponent("corpus-heic/heic/metadata-extractor/IMG_2927.HEIC")
        return try? Data(contentsOf: url)
    }()

    static let image2MP: Image = {
        let pixels = Inputs.photo2MP
        return Image(
            pixels: PixelBuffer(width: pixels.width, height: pixels.height, layout: .rgb8, bytes: pixels.bytes))
    }()

    /// The Display P3 profile the colour tests use (Tests/ColorManagementTests/Fixtures, made by the project).
    static let displayP3: [UInt8] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/ColorManagementTests/Fixtures/display-p3.icc")
        guard let data = try? Data(contentsOf: url) else { fatalError("missing \(url.path)") }
        return [UInt8](data)
    }()
}

func cDecode(_ data: Data) -> (checksum: UInt32, width: Int, height: Int) {
    var checksum: UInt32 = 0
    var width: Int32 = 0
    var height: Int32 = 0
    let status = data.withUnsafeBytes { raw in
        cb_heif_decode(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, &checksum, &width, &height)
    }
    precondition(status == 0, "cb_heif_decode failed")
    return (checksum, Int(width), Int(height))
}

let benchmarks: @Sendable () -> Void = {
    let decodeConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 2, maxDuration: .seconds(4), maxIterations: 30)
    let encodeConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 1, maxDuration: .seconds(12), maxIterations: 6)
    let colorConfig = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 3, maxDuration: .seconds(3), maxIterations: 100)

    var decodeInputs: [(String, () -> Data?)] = [("2MP", { HEIFInputs.photo2MP })]
    if HEIFInputs.iPhone12MP != nil { decodeInputs.append(("12MP_grid", { HEIFInputs.iPhone12MP })) }
    for (label, input) in decodeInputs {
        Benchmark("HEIC_\(label)_decode_SDK", configuration: decodeConfig) { benchmark in
            let data = input()!
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(try CodersManager.decode(data, with: HEIFCoder.shared, options: ImageDecodeOptions()))
            cpu.stop(benchmark)
        } setup: {
            let data = input()!
            let image = try CodersManager.decode(data, with: HEIFCoder.shared, options: ImageDecodeOptions())
            let c = cDecode(data)
            guard image.width == c.width, image.height == c.height, image.pixels.layout == .rgb8 else {
                throw SetupFailure(description: "SDK decoded \(image), C \(c.width)x\(c.height) RGB")
            }
        }

        Benchmark("HEIC_\(label)_decode_C", configuration: decodeConfig) { benchmark in
            let data = input()!
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(cDecode(data))
            cpu.stop(benchmark)
        } setup: {
            _ = input()
        }
    }

    Benchmark("HEIC_2MP_encode_SDK", configuration: encodeConfig) { benchmark in
        let image = HEIFInputs.image2MP
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try HEIFCoder.shared.encode(image, as: .heic, options: ImageEncodeOptions(quality: 0.85)))
        cpu.stop(benchmark)
    } setup: {
        _ = HEIFInputs.image2MP
    }

    Benchmark("HEIC_2MP_encode_C", configuration: encodeConfig) { benchmark in
        let pixels = Inputs.photo2MP
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        let size = pixels.bytes.withUnsafeBufferPointer {
            cb_heif_encode($0.baseAddress, Int32(pixels.width), Int32(pixels.height), nil)
        }
        precondition(size > 0)
        cpu.stop(benchmark)
    } setup: {
        _ = Inputs.photo2MP
    }

    Benchmark("Color_2MP_P3toSRGB_SDK", configuration: colorConfig) { benchmark in
        let pixels = HEIFInputs.image2MP.pixels
        let profile = HEIFInputs.displayP3
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try LCMSColorConverter.shared.convertToSRGB(pixels, iccProfile: profile))
        cpu.stop(benchmark)
    } setup: {
        // The transform is built on first use and cached: the steady state is what is measured.
        _ = try LCMSColorConverter.shared.convertToSRGB(HEIFInputs.image2MP.pixels, iccProfile: HEIFInputs.displayP3)
    }

    // The transform's address (a raw pointer is not Sendable); made once in setup, kept for the process.
    let transform = Mutex<Int>(0)
    Benchmark("Color_2MP_P3toSRGB_C", configuration: colorConfig) { benchmark in
        let pixels = Inputs.photo2MP
        let handle = UnsafeMutableRawPointer(bitPattern: transform.withLock { $0 })!
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        let out = [UInt8](unsafeUninitializedCapacity: pixels.bytes.count) { buffer, count in
            pixels.bytes.withUnsafeBufferPointer {
                cb_lcms_run(handle, $0.baseAddress, buffer.baseAddress, pixels.width * pixels.height)
            }
            count = pixels.bytes.count
        }
        blackHole(out)
        cpu.stop(benchmark)
    } setup: {
        let made = HEIFInputs.displayP3.withUnsafeBufferPointer { cb_lcms_transform_rgb8($0.baseAddress, $0.count) }
        guard let made else { throw SetupFailure(description: "lcms2 refused the profile") }
        transform.withLock { $0 = Int(bitPattern: made) }
    }
}
