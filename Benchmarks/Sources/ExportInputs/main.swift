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

/// `cb_avif_encode` (the AVIF suite's encoder: 4:2:0, quantizer 9) at `speed`.
func avif(_ pixels: Pixels, speed: Int32) throws -> Data {
    var bytes: UnsafeMutablePointer<UInt8>?
    let size = pixels.bytes.withUnsafeBufferPointer {
        cb_avif_encode(
            $0.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.channels), 9, speed, &bytes)
    }
    defer { free(bytes) }
    guard size > 0, let bytes else { throw CocoaError(.fileWriteUnknown) }
    return Data(bytes: bytes, count: size)
}

/// The thumbnail rows' inputs (thumbnails.py): the 12 MP photo and its 1920x1080 crop in JPEG (the camera's file;
/// the crop at quality 90, as CoderBenchmarks), PNG (libpng default level), WebP (quality 85) and AVIF (quantizer
/// 9; speed 6 for 2 MP as AVIFBenchmarks, speed 8 for 12 MP to keep the export short), all opaque RGB; and a
/// 16x16 crop in each format, the `vipsthumbnail` start-up run.
func writeThumbnailInputs() throws {
    let tiny = Inputs.photo12MP.centerCrop(width: 16, height: 16)
    for (label, pixels) in [("12mp", Inputs.photo12MP), ("2mp", Inputs.photo2MP), ("tiny", tiny)] {
        let jpeg = label == "12mp" ? Inputs.photo12MPJPEG : CEncode.jpeg(pixels, quality: 90)
        try write(jpeg, "thumb/\(label).jpg")
        try write(CEncode.png(pixels), "thumb/\(label).png")
        try write(CEncode.webp(pixels, quality: 85), "thumb/\(label).webp")
        try write(try avif(pixels, speed: label == "12mp" ? 8 : 6), "thumb/\(label).avif")
    }
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
    try writeThumbnailInputs()
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
