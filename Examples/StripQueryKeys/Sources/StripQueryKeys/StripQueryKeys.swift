import Foundation
import HTTPLoader
import ImageCore
import MemoryCache
import PNGCoder

/// Two URLs that differ only in a signed token share one cache entry once the cache key drops the query.
@main
struct StripQueryKeys {
    static func main() async throws {
        // A local "CDN" that serves one PNG under any ?token=…
        let png = try PNGCoder.shared.encode(checkerboard(size: 32), as: .png, options: .init())
        let server = LocalImageServer(files: ["/photos/cat.png": (png, "image/png")])
        let base = try await server.start()

        CodersManager.shared.addCoder(PNGCoder.shared)
        LoadersManager.shared.addLoader(HTTPLoader.shared)
        ImageManager.defaultImageCache = MemoryCache.shared
        let manager = ImageManager.shared

        // The point of the example: the cache key is the URL without its query string (and fragment).
        manager.cacheKeyFilter = .block { url in
            guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
                return url.absoluteString
            }
            components.query = nil
            components.fragment = nil
            return components.string
        }

        do {
            for token in ["abc", "xyz"] {
                let url = URL(string: "/photos/cat.png?token=\(token)", relativeTo: base)!.absoluteURL
                let result = try await manager.loadImage(with: url)
                let source = result.cacheType == .none ? "network" : result.cacheType.description
                print("url:   \(url.absoluteString)")
                print("key:   \(result.cacheKey ?? "(uncacheable)")")
                print("image: \(result.image.format) \(result.image.width)x\(result.image.height) from \(source)")
            }
            print("server requests: \(server.requests.count) \(server.requests)")
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// A black-and-white checkerboard of 4-pixel squares, RGB.
    static func checkerboard(size: Int) -> Image {
        var bytes: [UInt8] = []
        for y in 0..<size {
            for x in 0..<size {
                let value: UInt8 = (x / 4 + y / 4).isMultiple(of: 2) ? 255 : 0
                bytes += [value, value, value]
            }
        }
        return Image(pixels: PixelBuffer(width: size, height: size, layout: .rgb8, bytes: bytes))
    }
}
