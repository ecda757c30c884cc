import BenchMetrics
import BenchSupport
import Benchmark
import CBaselines
import Foundation
import ImageCore
import PNGCoder

// Issue 34: the PNG thumbnail stage by stage — the decode of a 2 MP photo PNG shrunk to fit 512x512 (what the
// ThumbnailServer asks the coder for), the reduce alone, the encode of the 512 px result — each beside the raw C
// calls: libpng's full decode (the decode rows' baseline), libdeflate's inflate of the same IDAT alone (the floor of
// any PNG decode), libpng's default encode (zlib 6, adaptive filters: the SDK's encode before issue 34) and libvips's
// PNG save settings through libpng (zlib 6, no row filter). The input is the coder rows' 2 MP PNG (libpng's
// default encode of the 1920x1080 crop of the corpus photo).

/// Records the size of a stage row's encode (PNG is lossless: size is the other half of an encoder's cost) as a
/// line "label<TAB>bytes" in the file `WEBIMAGE_BENCH_PNG_SIZES` names (run.sh's report reads it); nothing without.
private func reportSize(_ label: String, _ bytes: Int) {
    guard let path = ProcessInfo.processInfo.environment["WEBIMAGE_BENCH_PNG_SIZES"] else { return }
    if !FileManager.default.fileExists(atPath: path) {
        FileManager.default.createFile(atPath: path, contents: nil)
    }
    guard let handle = FileHandle(forWritingAtPath: path) else { return }
    defer { try? handle.close() }
    _ = try? handle.seekToEnd()
    handle.write(Data("\(label)\t\(bytes)\n".utf8))
}

func registerPNGStageBenchmarks() {
    let config = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTimeNs, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .nanoseconds, units: rawCountUnits(), warmupIterations: 2, maxDuration: .milliseconds(2500),
        maxIterations: 40)
    let registry = CodersManager(coders: [PNGCoder.shared])
    let box = PixelSize(width: 512, height: 512)
    let thumbnailOptions = ImageDecodeOptions(thumbnailPixelSize: box)
    @Sendable func source() -> Data { CoderInputs.data(.png, .mp2) }
    @Sendable func thumbnail() throws -> Image { try registry.decode(source(), options: thumbnailOptions) }

    Benchmark("PNG_2MP_thumb512_decode_SDK", configuration: config) { benchmark in
        let data = source()
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try registry.decode(data, options: thumbnailOptions))
        cpu.stop(benchmark)
    } setup: {
        let image = try thumbnail()
        guard max(image.width, image.height) == 512 else {
            throw SetupFailure(description: "PNG thumbnail is \(image.width)x\(image.height)")
        }
    }

    Benchmark("PNG_2MP_thumb512_decode_Clibpng", configuration: config) { benchmark in
        let data = source()
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(CBaseline.decode(.png, data))
        cpu.stop(benchmark)
    } setup: {
        _ = source()
    }

    Benchmark("PNG_2MP_inflate_Clibdeflate", configuration: config) { benchmark in
        let data = source()
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        var checksum: UInt32 = 0
        CBaseline.check(CBaseline.withBytes(data) { cb_png_inflate($0, $1, &checksum) }, "inflate")
        blackHole(checksum)
        cpu.stop(benchmark)
    } setup: {
        _ = source()
    }

    Benchmark("PNG_2MP_reduce512_SDK", configuration: config) { benchmark in
        let full = try PNGCoder.shared.decode(source(), options: ImageDecodeOptions()).pixels
        let target = ImageDecodeOptions(thumbnailPixelSize: box).targetSize(
            forSourceWidth: full.width, height: full.height)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(full.areaResampled(width: target.width, height: target.height))
        cpu.stop(benchmark)
    }

    Benchmark("PNG_2MP_reduce512_C", configuration: config) { benchmark in
        let full = try PNGCoder.shared.decode(source(), options: ImageDecodeOptions()).pixels
        let target = ImageDecodeOptions(thumbnailPixelSize: box).targetSize(
            forSourceWidth: full.width, height: full.height)
        var out = [UInt8](repeating: 0, count: target.width * target.height * 3)
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        full.bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                cb_area_resize(
                    src.baseAddress, Int32(full.width), Int32(full.height), dst.baseAddress, Int32(target.width),
                    Int32(target.height), 3)
            }
        }
        cpu.stop(benchmark)
        blackHole(out)
    }

    Benchmark("PNG_512_encode_SDK", configuration: config) { benchmark in
        let image = try thumbnail()
        benchmark.startMeasurement()
        let cpu = CPUClock.start()
        blackHole(try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions()))
        cpu.stop(benchmark)
    } setup: {
        reportSize(
            "SDK balanced", try PNGCoder.shared.encode(try thumbnail(), as: .png, options: ImageEncodeOptions()).count)
    }

    for (name, vipsLike) in [("PNG_512_encode_Clibpng", false), ("PNG_512_encode_Cvips", true)] {
        Benchmark(name, configuration: config) { benchmark in
            let pixels = try thumbnail().pixels
            var buffer = cb_buffer()
            defer { cb_buffer_free(&buffer) }
            benchmark.startMeasurement()
            let cpu = CPUClock.start()
            let status = pixels.bytes.withUnsafeBufferPointer { input in
                vipsLike
                    ? cb_png_encode_vips(
                        input.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, &buffer)
                    : cb_png_encode(input.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, &buffer)
            }
            cpu.stop(benchmark)
            CBaseline.check(status, name)
            blackHole(buffer.size)
        } setup: {
            let pixels = try thumbnail().pixels
            guard pixels.layout == .rgb8, pixels.bytesPerRow == pixels.width * 3 else {
                throw SetupFailure(description: "PNG thumbnail pixels are \(pixels.layout)")
            }
            var buffer = cb_buffer()
            defer { cb_buffer_free(&buffer) }
            let status = pixels.bytes.withUnsafeBufferPointer { input in
                vipsLike
                    ? cb_png_encode_vips(input.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, &buffer)
                    : cb_png_encode(input.baseAddress, Int32(pixels.width), Int32(pixels.height), 3, &buffer)
            }
            CBaseline.check(status, name)
            reportSize(vipsLike ? "C libvips settings" : "C libpng default", buffer.size)
        }
    }
}
