import Foundation
import ImageTestSupport
import Testing
import WebImage

/// `.decodeFirstFrameOnly` results are cached with the real GIF and WebP coders, stills and animations alike
/// (issue 21, item 3): the ThumbnailServer's loads (first frame, resized) are hits the second time, from memory and
/// after a restart from disk, with one download and one decode in all.
@Suite struct FirstFrameCachingTests {
    static func frames(_ count: Int) -> Image {
        let frames = (0..<count).map { index in
            ImageFrame(
                pixels: PixelBuffer(
                    width: 48, height: 32, layout: .rgba8,
                    bytes: [UInt8](repeating: UInt8(40 + index * 50), count: 48 * 32 * 4)),
                duration: 0.1)
        }
        return Image(frames: frames)
    }

    static let sources: [(String, ImageFormat, Int)] = [
        ("still.gif", .gif, 1), ("animated.gif", .gif, 3), ("still.webp", .webp, 1), ("animated.webp", .webp, 3),
    ]

    @Test(arguments: sources)
    func aFirstFrameThumbnailIsCached(_ name: String, _ format: ImageFormat, _ frames: Int) async throws {
        let directory = CacheFixtures.temporaryDirectory("first-frame")
        defer { try? FileManager.default.removeItem(at: directory) }
        let coders = CodersManager(coders: [GIFCoder.shared, WebPCoder.shared])
        let bytes = try coders.encode(Self.frames(frames), as: format, options: ImageEncodeOptions(lossless: true))
        #expect(coders.probe(bytes)?.frameCount == frames, "the probe counts the frames")
        let url = URL(string: "https://origin.example/\(name)")!
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(bytes, ResponseMetadata(url: url, statusCode: 200)), for: url)
        func manager() -> ImageManager {
            ImageManager(
                cache: CachesManager([
                    MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: directory)),
                ]), loader: loader, coders: coders)
        }
        var context = ImageContext()
        context.imageTransformer = ResizeTransformer(width: 24, height: 24)
        let first = manager()
        let cold = try await first.loadImage(
            with: url, options: [.decodeFirstFrameOnly, .waitStoreCache], context: context)
        #expect(cold.cacheType == .none && cold.image.frameCount == 1 && cold.image.width == 24)
        let warm = try await first.loadImage(with: url, options: .decodeFirstFrameOnly, context: context)
        #expect(warm.cacheType == .memory, "\(name): the second load is a memory hit")
        let restarted = try await manager().loadImage(with: url, options: .decodeFirstFrameOnly, context: context)
        #expect(restarted.cacheType == .disk, "\(name): after a restart, a disk hit of the thumbnail itself")
        #expect(restarted.image.frameCount == 1 && restarted.image.width == 24)
        #expect(loader.requestCount == 1)
    }
}
