import AVIFCoder
import Foundation
import ImageCore
import ImageTransformers
import JPEGCoder
import PNGCoder
import WebPCoder

// The SDK side of the thumbnail rows (issue 23 item 5), driven by thumbnails.py so that its passes interleave with
// `vipsthumbnail` runs of the same file in the same minute. A warm, long-lived process, like a server's:
//
//   ThumbnailRunner            reads commands from stdin, one per line, answers one line each:
//   thumb <input> <side> <output>   → "ok <width> <height> <cpu ns> <wall ns>" or "error <message>"
//
// One `thumb` is what `vipsthumbnail <input> -s <side>x<side> -o <output>[Q=85]` does: read the file, decode at
// thumbnail size (`ImageDecodeOptions.thumbnailPixelSize`, through a `CodersManager` as a load decodes: probe, then
// the coder's shrink-on-load), fit it inside side × side (the same check as the CoderBenchmarks thumbnail row: a
// resize only when the decoder's size differs), encode JPEG quality 0.85, write the file. CPU time is the whole
// process's (`CLOCK_PROCESS_CPUTIME_ID`) over exactly that work.

let coders = CodersManager(coders: [JPEGCoder.shared, PNGCoder.shared, WebPCoder.shared, AVIFCoder.shared])
let encodeOptions = ImageEncodeOptions(quality: 0.85)

func clock(_ id: clockid_t) -> Int {
    var time = timespec()
    clock_gettime(id, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

func thumbnail(input: String, side: Int, output: String) throws -> (PixelSize, cpu: Int, wall: Int) {
    let wall = clock(CLOCK_MONOTONIC)
    let cpu = clock(CLOCK_PROCESS_CPUTIME_ID)
    let data = try Data(contentsOf: URL(fileURLWithPath: input))
    let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: side, height: side))
    var image = try coders.decode(data, options: options)
    let fit = ResizeTransformer(width: side, height: side, mode: .aspectFit)
    let target = fit.outputSize(for: PixelSize(width: image.width, height: image.height))
    if target.width != image.width || target.height != image.height {
        image = try fit.transform(image, forKey: "")
    }
    let jpeg = try JPEGCoder.shared.encode(image, as: .jpeg, options: encodeOptions)
    try jpeg.write(to: URL(fileURLWithPath: output))
    let size = PixelSize(width: image.width, height: image.height)
    return (size, clock(CLOCK_PROCESS_CPUTIME_ID) - cpu, clock(CLOCK_MONOTONIC) - wall)
}

/// Writes one answer line straight to the pipe (no stdio buffering: the driver waits for it).
func answer(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

while let line = readLine() {
    let words = line.split(separator: " ").map(String.init)
    guard words.count == 4, words[0] == "thumb", let side = Int(words[2]), side > 0 else {
        answer("error usage: thumb <input> <side> <output>")
        continue
    }
    do {
        let (size, cpu, wall) = try thumbnail(input: words[1], side: side, output: words[3])
        answer("ok \(size.width) \(size.height) \(cpu) \(wall)")
    } catch {
        answer("error \(String(describing: error).replacingOccurrences(of: "\n", with: " "))")
    }
}
