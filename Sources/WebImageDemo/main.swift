import Foundation
import WebImage

// The demo: serve generated images from 127.0.0.1, then load them through ImageManager cold (network), warm
// (memory), after a "restart" (a new manager and memory cache over the same disk directory: disk), and as
// thumbnails made from the cached originals (no download). No internet needed.

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-demo-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }

func diskCache() -> DiskCache { DiskCache(configuration: DiskCacheConfiguration(directory: directory)) }

let plugins = registerDefaultPlugins(memoryCache: MemoryCache(), diskCache: diskCache())
let server = SampleServer(files: try SampleImages.make())
let base = try await server.start()
let names = ["photo.jpg", "photo.webp", "icon.png", "spinner.gif"]
let urls = names.map { base.appendingPathComponent("images").appendingPathComponent($0) }

func describe(_ type: ImageCacheType) -> String { type == .none ? "network" : "\(type)" }

func pass(_ title: String, manager: ImageManager, context: ImageContext? = nil) async {
    let before = server.requestCount
    print("\n\(title)")
    print("  image          format  size        frames  from      time")
    for (name, url) in zip(names, urls) {
        let start = ContinuousClock.now
        do {
            let result = try await manager.loadImage(with: url, context: context)
            let elapsed = ContinuousClock.now - start
            let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            let image = result.image
            print(
                "  " + name.padding(toLength: 15, withPad: " ", startingAt: 0)
                    + image.format.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
                    + "\(image.width)x\(image.height)".padding(toLength: 12, withPad: " ", startingAt: 0)
                    + "\(image.frameCount)".padding(toLength: 8, withPad: " ", startingAt: 0)
                    + describe(result.cacheType).padding(toLength: 10, withPad: " ", startingAt: 0)
                    + String(format: "%.2f ms", ms))
        } catch {
            print("  \(name): \(error)")
        }
    }
    print("  server requests in this pass: \(server.requestCount - before)")
}

await pass("1. cold: nothing cached, every image comes from the local server", manager: .shared)
await pass("2. warm: the same loads hit the memory cache", manager: .shared)

// A "restart": a new memory cache and a new DiskCache over the same directory.
let restarted = ImageManager(cache: CachesManager([MemoryCache(), diskCache()]), loader: LoadersManager.shared)
await pass("3. restarted process: memory is empty, the disk cache answers", manager: restarted)

var thumbnail = ImageContext()
thumbnail.imageTransformer = ResizeTransformer(width: 128, height: 128)
await pass("4. 128 px thumbnails: made from the cached originals, no download", manager: restarted, context: thumbnail)

print("\ncache keys, e.g.: \(restarted.cacheKey(for: urls[0], context: thumbnail) ?? "-")")
print("disk cache: \(plugins.diskCache.configuration.directory.path)")
try await plugins.httpLoader.shutdown()
try await server.stop()
