import BenchSupport
import CAVIFBaseline
import Foundation

// Writes the benchmark inputs for the out-of-process baselines (vips, Pillow) and the files nginx serves.
// Usage: ExportInputs <directory>
let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: ExportInputs <directory>\n".utf8))
    exit(64)
}
let root = URL(fileURLWithPath: arguments[1], isDirectory: true)
let fileManager = FileManager.default

func write(_ data: Data, _ path: String) throws {
    let url = root.appendingPathComponent(path)
    try fileManager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try data.write(to: url)
}

do {
    try write(Inputs.photo12MPJPEG, "photo12mp.jpg")
    let rgba12 = Inputs.photo12MP.rgba()
    try write(CEncode.png(rgba12), "rgba12mp.png")
    try write(CEncode.png(Inputs.photo2MP.rgba()), "rgba2mp.png")
    // The AVIF benchmark's input, the same bytes AVIFBenchmarks decodes (C encoder, speed 6, quantizer 9).
    var avif: UnsafeMutablePointer<UInt8>?
    let photo = Inputs.photo2MP
    let avifSize = photo.bytes.withUnsafeBufferPointer {
        cb_avif_encode($0.baseAddress, Int32(photo.width), Int32(photo.height), 3, 9, 6, &avif)
    }
    if avifSize > 0, let avif { try write(Data(bytes: avif, count: avifSize), "photo2mp.avif") }
    free(avif)
    for index in 0..<Inputs.httpSmallCount {
        try write(Inputs.httpSmallImage(index), "http/" + Inputs.httpSmallPath(index))
    }
    for index in 0..<Inputs.httpLargeCount {
        try write(Inputs.httpLargeImage(index), "http/" + Inputs.httpLargePath(index))
    }
    print("inputs written to \(root.path)")
} catch {
    FileHandle.standardError.write(Data("ExportInputs: \(error)\n".utf8))
    exit(1)
}
