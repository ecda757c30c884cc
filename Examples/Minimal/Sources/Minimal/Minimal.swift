import Foundation
import ImageCore
import MemoryCache
import PNGCoder

/// Loads a PNG from a `file://` URL and from a `data:` URL, twice each: the second load comes from memory.
@main
struct Minimal {
    static func main() async throws {
        // 1. Register the plugins this program uses. Set the defaults before the first use of `shared`.
        CodersManager.shared.addCoder(PNGCoder.shared)
        ImageManager.defaultImageCache = MemoryCache.shared
        let manager = ImageManager.shared

        // 2. Make a PNG to load: a 64x48 gradient, encoded with PNGCoder's encoder.
        let png = try PNGCoder.shared.encode(gradient(width: 64, height: 48), as: .png, options: .init())
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-minimal-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileURL = directory.appendingPathComponent("gradient.png")
        try png.write(to: fileURL)
        // Local files are opt-in, and only below the directory a loader is given.
        LoadersManager.shared.addLoader(FileLoader(rootDirectory: directory))
        let dataURL = URL(string: "data:image/png;base64,\(png.base64EncodedString())")!

        // 3. Load each URL twice: first from its loader (cache type "none"), then from the memory cache.
        for (name, url) in [("file", fileURL), ("file", fileURL), ("data", dataURL), ("data", dataURL)] {
            let result = try await manager.loadImage(with: url)
            let source = result.cacheType == .none ? "loader" : "\(result.cacheType) cache"
            print("\(name): \(result.image.format) \(result.image.width)x\(result.image.height) from \(source)")
        }
        print("memory cache: \(MemoryCache.shared.count) entries, \(MemoryCache.shared.totalCost) bytes")
    }

    /// An RGBA image whose red grows left to right and green top to bottom.
    static func gradient(width: Int, height: Int) -> Image {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                bytes += [UInt8(x * 255 / (width - 1)), UInt8(y * 255 / (height - 1)), 128, 255]
            }
        }
        return Image(pixels: PixelBuffer(width: width, height: height, layout: .rgba8, bytes: bytes))
    }
}
