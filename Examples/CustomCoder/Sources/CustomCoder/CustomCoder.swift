import DiskCache
import Foundation
import HTTPLoader
import ImageCore
import MemoryCache
import PNGCoder

/// A coder written here (PPM), registered at runtime, loaded over HTTP and then from the disk cache; and a coder
/// registered after the built-in PNG coder that wins for the same bytes.
@main
struct CustomCoder {
    static func main() async throws {
        // 1. Register the coders: the built-in PNG coder, then ours. The last added is asked first.
        let auditingPNG = AuditingPNGCoder()
        CodersManager.shared.addCoder(PNGCoder.shared)
        CodersManager.shared.addCoder(PPMCoder())
        CodersManager.shared.addCoder(auditingPNG)
        LoadersManager.shared.addLoader(HTTPLoader.shared)
        print("coders, asked in this order: \(CodersManager.shared.coders.reversed().map { "\(type(of: $0))" })")

        // 2. A web server with a PPM picture, and one whose header claims 20000x20000 pixels (a "bomb").
        let picture = try PPMCoder().encode(sunset(width: 48, height: 32), as: .ppm, options: .init())
        let bomb = Data("P6\n20000 20000\n255\n".utf8) + Data(count: 64)
        let server = LocalImageServer(files: [
            "/images/sunset.ppm": (picture, "image/x-portable-pixmap"),
            "/images/bomb.ppm": (bomb, "image/x-portable-pixmap"),
        ])
        let base = try await server.start()
        let cacheDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-customcoder-\(ProcessInfo.processInfo.processIdentifier)")
        do {
            try await run(base: base, server: server, cacheDirectory: cacheDirectory, auditingPNG: auditingPNG)
        } catch {
            try? FileManager.default.removeItem(at: cacheDirectory)
            try await server.stop()
            throw error
        }
        try? FileManager.default.removeItem(at: cacheDirectory)
        try await server.stop()
    }

    static func run(base: URL, server: LocalImageServer, cacheDirectory: URL, auditingPNG: AuditingPNGCoder)
        async throws
    {
        // A two-level cache whose disk level lives in `cacheDirectory`; each call makes a fresh manager.
        func makeManager() -> ImageManager {
            let disk = DiskCache(configuration: DiskCacheConfiguration(directory: cacheDirectory))
            return ImageManager(cache: CachesManager([MemoryCache(), disk]), loader: LoadersManager.shared)
        }
        let url = URL(string: "/images/sunset.ppm", relativeTo: base)!.absoluteURL

        // 3. Over HTTP, decoded by PPMCoder; `.waitStoreCache` returns once the bytes are on disk.
        let first = try await makeManager().loadImage(with: url, options: .waitStoreCache)
        report("manager 1", first)

        // 4. A second manager over the same directory (think: the next run of the program) reads the disk cache.
        let second = try await makeManager().loadImage(with: url)
        report("manager 2", second)
        print("server requests for sunset.ppm: \(server.requests.filter { $0.hasSuffix("sunset.ppm") }.count)")

        // 5. The pixel budget is checked from the header (probe) before anything is allocated.
        do {
            _ = try await makeManager().loadImage(with: URL(string: "/images/bomb.ppm", relativeTo: base)!.absoluteURL)
            print("bomb.ppm: decoded (unexpected)")
        } catch {
            print("bomb.ppm: refused with \(error.code) at the \(error.stage) stage: \(error.message ?? "")")
        }

        // 6. The coder's own option, typed, through the load's context: a gamma of 2.2 brightens the midtones. It is
        //    part of the cache key, so the corrected image gets its own entry, made from the original on disk.
        let manager = makeManager()
        var context = ImageContext()
        context[coderOption: PPMGamma.self] = 2.2
        let corrected = try await manager.loadImage(with: url, options: .waitStoreCache, context: context)
        let plain = try await manager.loadImage(with: url)
        print(
            "gamma 2.2: green at (0,0) \(corrected.image.pixels.pixel(x: 0, y: 0).dropFirst().first ?? 0) vs \(plain.image.pixels.pixel(x: 0, y: 0).dropFirst().first ?? 0), key ends \(corrected.cacheKey?.split(separator: " ").dropFirst().joined(separator: " ") ?? "-")"
        )
        print(
            "server requests for sunset.ppm after the gamma load: \(server.requests.filter { $0.hasSuffix("sunset.ppm") }.count)"
        )

        // 7. Priority: PNG bytes go to AuditingPNGCoder, added after the built-in PNGCoder.
        let png = try PNGCoder.shared.encode(sunset(width: 16, height: 16), as: .png, options: .init())
        let dataURL = URL(string: "data:image/png;base64,\(png.base64EncodedString())")!
        let pngResult = try await makeManager().loadImage(with: dataURL)
        print(
            "png: \(pngResult.image.width)x\(pngResult.image.height), AuditingPNGCoder decodes: \(auditingPNG.decodes)")
    }

    static func report(_ name: String, _ result: ImageResult) {
        let source = result.cacheType == .none ? "network" : "\(result.cacheType) cache"
        print("\(name): \(result.image.format) \(result.image.width)x\(result.image.height) from \(source)")
    }

    /// An orange-to-purple vertical gradient with a yellow sun.
    static func sunset(width: Int, height: Int) -> Image {
        var bytes: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let dx = x - width / 2
                let dy = y - height * 2 / 3
                if dx * dx + dy * dy < (height / 4) * (height / 4) {
                    bytes += [255, 220, 60]
                } else {
                    let t = y * 255 / max(1, height - 1)
                    bytes += [UInt8(255 - t / 3), UInt8(140 - t / 2), UInt8(60 + t / 2)]
                }
            }
        }
        return Image(pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes))
    }
}
