// Issue 35 item 4: the perceptual quality target against fixed q 80, and the placeholders' cost, on the corpus
// photos at the thumbnail service's sizes. perceptual.sh runs it and perceptual_report.py turns its rows into
// RESULTS.md's section and the chart.
//
//   PerceptualRunner <photos-dir> <out.tsv>
//
// For each size (fit 512, fit 256) and format (JPEG, WebP, AVIF; default effort): every photo is decoded to the size
// (shrink-on-load, as the service decodes), encoded at q 80 (CPU time: median of 5), decoded and measured with
// butteraugli (max norm). The target is the median of those distances. Then every photo is encoded with that target
// (CPU time of the whole search: encodes, decodes, metric; one run), its output decoded and measured again. Process
// CPU time (CLOCK_PROCESS_CPUTIME_ID) around exactly the measured call; everything is single-threaded.
import AVIFCoder
import Foundation
import ImageCore
import ImageTransformers
import JPEGCoder
import JXLCoder
import PNGCoder
import WebPCoder

func cpuNow() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

func timed<T>(_ body: () throws -> T) rethrows -> (T, Int) {
    let start = cpuNow()
    let value = try body()
    return (value, cpuNow() - start)
}

func medianCPU<T>(_ runs: Int, _ body: () throws -> T) rethrows -> (T, Int) {
    var times: [Int] = []
    var last: T?
    for _ in 0..<runs {
        let (value, time) = try timed(body)
        times.append(time)
        last = value
    }
    return (last!, times.sorted()[runs / 2])
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: PerceptualRunner <photos-dir> <out.tsv>\n".utf8))
    exit(2)
}
let folder = URL(fileURLWithPath: arguments[1], isDirectory: true)
let photos = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    .filter { ["jpg", "jpeg", "png"].contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
PerceptualQuality.register(ButteraugliMetric.shared)
let decoders = CodersManager(coders: [PNGCoder.shared, JPEGCoder.shared])
let formats: [(ImageFormat, String, any ImageCoder)] = [
    (.jpeg, "JPEG", JPEGCoder.shared), (.webp, "WebP", WebPCoder.shared), (.avif, "AVIF", AVIFCoder.shared),
]
var rows = [
    [
        "size", "format", "cap", "photo", "width", "height", "q80_bytes", "q80_cpu_ns", "q80_distance", "metric_cpu_ns",
        "decode_cpu_ns", "target", "target_bytes", "target_cpu_ns", "target_distance", "target_quality",
        "target_encodes", "blurhash_cpu_ns", "thumbhash_cpu_ns",
    ].joined(separator: "\t")
]
for side in [512, 256] {
    let box = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: side, height: side))
    let images = try photos.map {
        try decoders.decode(Data(contentsOf: folder.appendingPathComponent($0)), options: box)
    }
    // Placeholders from the decoded image, as the service would hash its thumbnail: median of 21 runs each.
    let placeholders = try images.map { image -> (Int, Int) in
        let (_, blur) = try medianCPU(21) { try BlurHash.encode(image) }
        let (_, thumb) = try medianCPU(21) { try ThumbHash.encode(image) }
        return (blur, thumb)
    }
    for (format, name, coder) in formats {
        var fixed: [(bytes: Int, cpu: Int, distance: Double, metric: Int, decode: Int)] = []
        for image in images {
            let (data, cpu) = try medianCPU(5) {
                try coder.encode(image, as: format, options: ImageEncodeOptions(quality: 0.8))
            }
            let (decoded, decodeCPU) = try timed { try coder.decode(data, options: ImageDecodeOptions()).pixels }
            let (distance, metricCPU) = try timed {
                try ButteraugliMetric.shared.distance(from: image.pixels, to: decoded)
            }
            fixed.append((data.count, cpu, distance, metricCPU, decodeCPU))
        }
        // The target: the median distance q 80 reaches on the set (the mean of the two middle ones).
        let sorted = fixed.map(\.distance).sorted()
        let median =
            sorted.count % 2 == 0
            ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
        // Two configurations: the target alone, and capped at the fixed quality it replaces (`maxQuality` 0.8).
        for cap in [1.0, 0.8] {
            let options = ImageEncodeOptions(
                perceptualTarget: PerceptualTarget(maxDistance: median, maxQuality: cap))
            for (index, image) in images.enumerated() {
                let (encoded, cpu) = try timed { try coder.encodeWithReport(image, as: format, options: options) }
                let decoded = try coder.decode(encoded.data, options: ImageDecodeOptions()).pixels
                let distance = try ButteraugliMetric.shared.distance(from: image.pixels, to: decoded)
                let report = encoded.perceptual!
                let f = fixed[index]
                rows.append(
                    [
                        "\(side)", name, "\(cap)", photos[index], "\(image.width)", "\(image.height)", "\(f.bytes)",
                        "\(f.cpu)", "\(f.distance)", "\(f.metric)", "\(f.decode)", "\(median)",
                        "\(encoded.data.count)", "\(cpu)", "\(distance)", "\(report.quality)", "\(report.encodes)",
                        "\(placeholders[index].0)", "\(placeholders[index].1)",
                    ].joined(separator: "\t"))
                let line =
                    "\(side) \(name) cap \(cap) \(photos[index]): q80 \(f.bytes) B d \(f.distance); target \(median) → "
                    + "q \(report.quality) \(encoded.data.count) B d \(distance) in \(report.encodes) encodes, "
                    + "CPU \(cpu / 1_000_000) ms vs \(f.cpu / 1000) µs\n"
                FileHandle.standardError.write(Data(line.utf8))
            }
        }
    }
}
try (rows.joined(separator: "\n") + "\n").write(toFile: arguments[2], atomically: true, encoding: .utf8)
