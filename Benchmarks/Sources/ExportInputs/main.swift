import BenchSupport
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
    for index in 0..<Inputs.httpSmallCount {
        try write(Inputs.httpSmallImage(index), "http/" + Inputs.httpSmallPath(index))
    }
    for index in 0..<Inputs.httpLargeCount {
        try write(Inputs.httpLargeImage(index), "http/" + Inputs.httpLargePath(index))
    }
    for index in 0..<Inputs.httpPhotoCount {
        try write(Inputs.httpPhotoImage(index), "http/" + Inputs.httpPhotoPath(index))
    }
    print("inputs written to \(root.path)")
} catch {
    FileHandle.standardError.write(Data("ExportInputs: \(error)\n".utf8))
    exit(1)
}
