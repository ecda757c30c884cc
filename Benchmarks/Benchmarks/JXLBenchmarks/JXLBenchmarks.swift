import BenchMetrics
import BenchSupport
import Benchmark
import CJXLBaseline
import Foundation
import ImageCore
import JXLCoder
import Synchronization

// Issue 24: JPEG XL decode through JXLCoder against the raw libjxl decoder loop (djxl's work, one thread, 8-bit
// output) on the same bytes: the 2 MP photo lossy (distance 1, effort 7: cjxl's defaults) and lossless, and a
// 30-frame animation decoded frame by frame.

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

/// The JPEG XL inputs, encoded once per process by the C baseline from the benchmark photo.
enum JXLInputs {
    private static let cache = Mutex<[String: Data]>([:])

    private static func cached(_ key: String, _ make: () -> Data) -> Data {
        if let data = cache.withLock({ $0[key] }) { return data }
        let data = make()
        cache.withLock { $0[key] = data }
        return data
    }

    private static func encode(_ bytes: [UInt8], width: Int, height: Int, frames: Int, distance: Float) -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        let size = bytes.withUnsafeBufferPointer {
            cb_jxl_encode($0.baseAddress, Int32(width), Int32(height), 3, Int32(frames), distance, 7, &out)
        }
        precondition(size > 0 && out != nil, "cb_jxl_encode failed")
        defer { free(out) }
        return Data(bytes: out!, count: size)
    }

    /// The 2 MP photo, lossy at distance 1 (quality 90).
    static var photo2MPLossy: Data {
        cached("lossy") {
            let p = Inputs.photo2MP
            return encode(p.bytes, width: p.width, height: p.height, frames: 1, distance: 1)
        }
    }

    /// The 2 MP photo, lossless.
    static var photo2MPLossless: Data {
        cached("lossless") {
            let p = Inputs.photo2MP
            return encode(p.bytes, width: p.width, height: p.height, frames: 1, distance: 0)
        }
    }

    /// 30 frames of 480x270: crops of the photo sliding 8 pixels a frame, lossy at distance 1.
    static var animation: Data {
        cached("animation") {
            let photo = Inputs.photo2MP
            var bytes: [UInt8] = []
            for frame in 0..<30 {
                bytes += photo.crop(x: 400 + frame * 8, y: 300, width: 480, height: 270).bytes
            }
            return encode(bytes, width: 480, height: 270, frames: 30, distance: 1)
        }
    }
}

func cDecode(_ data: Data) -> (checksum: UInt32, width: Int, height: Int, frames: Int) {
    var checksum: UInt32 = 0
    var width: Int32 = 0
    var height: Int32 = 0
    var frames: Int32 = 0
    let status = data.withUnsafeBytes { raw in
        cb_jxl_decode(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, &checksum, &width, &height, &frames)
    }
    precondition(status == 0, "cb_jxl_decode failed")
    return (checksum, Int(width), Int(height), Int(frames))
}

let benchmarks: @Sendable () -> Void = {
    let config = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal], timeUnits: .nanoseconds,
        units: rawCountUnits(), warmupIterations: 2, maxDuration: .seconds(4), maxIterations: 40)
    let all = ImageDecodeOptions(preloadAllFrames: true)
    let cases: [(String, @Sendable () -> Data)] = [
        ("JXL_2MP_lossy", { JXLInputs.photo2MPLossy }), ("JXL_2MP_lossless", { JXLInputs.photo2MPLossless }),
        ("JXL_anim30_480x270", { JXLInputs.animation }),
    ]
    for (name, input) in cases {
        Benchmark("\(name)_decode_SDK", configuration: config) { benchmark in
            let data = input()
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(try CodersManager.decode(data, with: JXLCoder.shared, options: all))
            cpu.stop(benchmark)
        } setup: {
            let data = input()
            let image = try CodersManager.decode(data, with: JXLCoder.shared, options: all)
            let c = cDecode(data)
            guard image.width == c.width, image.height == c.height, image.frameCount == c.frames else {
                throw SetupFailure(description: "SDK decoded \(image), C \(c.width)x\(c.height) × \(c.frames)")
            }
        }

        Benchmark("\(name)_decode_C", configuration: config) { benchmark in
            let data = input()
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            blackHole(cDecode(data))
            cpu.stop(benchmark)
        } setup: {
            _ = input()
        }
    }
}
