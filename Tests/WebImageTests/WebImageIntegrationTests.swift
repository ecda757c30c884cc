import Foundation
import ImageTestSupport
import Testing
import WebImage

/// End-to-end checks across plugins: the defaults a user registers at runtime, real coders, real caches.
/// Serialized: the tests set the process-wide manager defaults.
@Suite(.serialized) struct WebImageIntegrationTests {
    private static func photo(width: Int, height: Int, alpha: Bool = false) -> Image {
        let channels = alpha ? 4 : 3
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * channels
                bytes[i] = UInt8(x * 255 / max(1, width - 1))
                bytes[i + 1] = UInt8(y * 255 / max(1, height - 1))
                bytes[i + 2] = UInt8((x + y) % 256)
                if alpha { bytes[i + 3] = 200 }
            }
        }
        return Image(pixels: PixelBuffer(width: width, height: height, layout: alpha ? .rgba8 : .rgb8, bytes: bytes))
    }

    @Test func registerDefaultPluginsInstallsEveryCoderAndTheTwoLevelCache() throws {
        let directory = CacheFixtures.temporaryDirectory("umbrella")
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugins = registerDefaultPlugins(
            memoryCache: MemoryCache(),
            diskCache: DiskCache(configuration: DiskCacheConfiguration(directory: directory)))
        #expect(registerDefaultPlugins().cache === plugins.cache, "a second call changes nothing")
        #expect(ImageManager.defaultImageCache as? CachesManager === plugins.cache)
        #expect(ImageManager.defaultImageLoader as? LoadersManager === LoadersManager.shared)
        #expect(LoadersManager.shared.canRequestImage(for: URL(string: "https://example.com/a.png")!))
        #expect(ColorConversion.converter is LCMSColorConverter, "registered; conversion itself stays off")
        #expect(PerceptualQuality.metric is ButteraugliMetric, "registered for encodes with a perceptual target")
        #expect(!ImageDecodeOptions().convertToSRGB)
        let source = Self.photo(width: 40, height: 30)
        let animated = Image(frames: [
            ImageFrame(pixels: source.pixels, duration: 0.1), ImageFrame(pixels: source.pixels, duration: 0.2),
        ])
        let cases: [(ImageFormat, any ImageCoder, Image)] = [
            (.png, PNGCoder.shared, source), (.jpeg, JPEGCoder.shared, source), (.webp, WebPCoder.shared, source),
            (.gif, GIFCoder.shared, animated), (.heic, HEIFCoder.shared, source),
            (.png, PNGCoder.shared, animated), (.jxl, JXLCoder.shared, source), (.jxl, JXLCoder.shared, animated),
        ]
        for (format, coder, image) in cases {
            let data = try coder.encode(image, as: format, options: ImageEncodeOptions())
            #expect(ImageFormat.detect(data) == format)
            let decoded = try CodersManager.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
            #expect(decoded.width == 40 && decoded.height == 30, "\(format)")
            #expect(decoded.format == format)
            #expect(decoded.frameCount == image.frameCount, "\(format)")
        }
    }

    @Test func defaultImageCacheSurvivesARestartOnTheSameDirectory() async throws {
        let directory = CacheFixtures.temporaryDirectory("restart")
        defer { try? FileManager.default.removeItem(at: directory) }
        CodersManager.shared.addCoder(PNGCoder.shared)
        let file = directory.appendingPathComponent("source.png")
        try PNGCoder.shared.encode(Self.photo(width: 20, height: 10), as: .png, options: ImageEncodeOptions())
            .write(to: file)
        let previous = (ImageManager.defaultImageCache, ImageManager.defaultImageLoader)
        defer { (ImageManager.defaultImageCache, ImageManager.defaultImageLoader) = previous }
        let cacheDirectory = directory.appendingPathComponent("cache")
        func freshCache() -> CachesManager {
            CachesManager([MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: cacheDirectory))])
        }
        ImageManager.defaultImageLoader = LoadersManager(loaders: [FileLoader(rootDirectory: directory)])
        ImageManager.defaultImageCache = freshCache()
        let first = ImageManager()
        let cold = try await first.loadImage(with: file, options: .waitStoreCache)
        #expect(cold.cacheType == .none)
        #expect(try await first.loadImage(with: file).cacheType == .memory)
        try FileManager.default.removeItem(at: file)
        ImageManager.defaultImageCache = freshCache()
        let restarted = ImageManager()
        let warm = try await restarted.loadImage(with: file)
        #expect(warm.cacheType == .disk, "a new cache over the same directory answers from disk; the file is gone")
        #expect(warm.image.width == 20 && warm.image.format == .png)
    }

    /// `.refreshStale` data loads on the real two-level cache: the bytes survive a restart on disk, a stale copy is
    /// revalidated and renewed by a 304, a fresh one asks nobody, and an image load of the URL decodes the same bytes.
    @Test func keptBytesSurviveARestartAndAreRevalidatedOnTheRealCaches() async throws {
        let directory = CacheFixtures.temporaryDirectory("kept")
        defer { try? FileManager.default.removeItem(at: directory) }
        CodersManager.shared.addCoder(JPEGCoder.shared)
        let url = URL(string: "https://origin.example/photos/kept.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        let jpeg = try JPEGCoder.shared.encode(
            Self.photo(width: 80, height: 60), as: .jpeg, options: ImageEncodeOptions())
        // The loader's own blob travels with the bytes: kept on disk (an extended attribute), handed back after a
        // restart, shown to the revalidating loader, replaced by the 304's.
        let blob = Data("hops:origin.example".utf8)
        var response = ResponseMetadata(url: url, statusCode: 200, contentType: "image/jpeg", etag: "\"v1\"", maxAge: 0)
        response.extendedData = blob
        loader.set(.data(jpeg, response), for: url)
        func freshCache() -> CachesManager {
            CachesManager([MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: directory))])
        }
        let first = ImageManager(cache: freshCache(), loader: loader)
        let served = try await first.loadData(with: url, options: .refreshStale)
        #expect(served.data == jpeg && served.cacheType == .none)
        /// The disk entry's metadata once `accept` holds for it (the disk is written in the background), else nil.
        func diskMetadata(_ accept: (CacheEntryMetadata) -> Bool) async throws -> CacheEntryMetadata? {
            for _ in 0..<500 {
                let hit = try await freshCache().queryImage(forKey: url.absoluteString, cacheType: .disk)
                if let metadata = hit?.metadata, hit?.data == jpeg, accept(metadata) { return metadata }
                try await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }
        #expect(
            try await diskMetadata { $0.etag == "\"v1\"" && $0.extendedData == blob } != nil,
            "the served bytes are kept on disk, with the loader's blob")

        // A restart over the same directory: the copy is stale (max-age=0), so it is revalidated; the 304 renews it.
        var notModified = ImageError(.cacheNotModified, stage: .download, statusCode: 304)
        var renewedResponse = ResponseMetadata(url: url, statusCode: 304, etag: "\"v1\"", maxAge: 300)
        let renewedBlob = Data("hops:origin.example,cdn.example".utf8)
        renewedResponse.extendedData = renewedBlob
        notModified.response = renewedResponse
        loader.set(.failure(notModified), for: url)
        let restarted = ImageManager(cache: freshCache(), loader: loader)
        let revalidated = try await restarted.loadData(with: url, options: .refreshStale)
        #expect(revalidated.data == jpeg && revalidated.isNotModified && revalidated.cacheType == .disk)
        #expect(loader.requests.last?.context.loaderCachedMetadata?.etag == "\"v1\"")
        #expect(loader.requests.last?.context.loaderCachedMetadata?.extendedData == blob)
        #expect(revalidated.response.extendedData == renewedBlob)
        #expect(loader.requestCount == 2)
        #expect(
            try await diskMetadata {
                ($0.expiresAt?.timeIntervalSinceNow ?? 0) > 250 && $0.extendedData == renewedBlob
            } != nil, "renewed, with the 304's blob")
        let fresh = try await restarted.loadData(with: url, options: .refreshStale)
        #expect(fresh.data == jpeg && !fresh.isNotModified && fresh.cacheType == .disk)
        #expect(fresh.response.extendedData == renewedBlob)
        let image = try await restarted.loadImage(with: url)
        #expect(image.image.width == 80 && image.cacheType == .disk)
        #expect(loader.requestCount == 2, "fresh after the 304: neither load asked the loader")
    }

    @Test func oneDownloadServesTwoTransformedSizesFromCache() async throws {
        let directory = CacheFixtures.temporaryDirectory("transform")
        defer { try? FileManager.default.removeItem(at: directory) }
        CodersManager.shared.addCoder(JPEGCoder.shared)
        let url = URL(string: "https://origin.example/photos/cat.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        let jpeg = try JPEGCoder.shared.encode(
            Self.photo(width: 800, height: 600), as: .jpeg, options: ImageEncodeOptions())
        loader.set(.data(jpeg, ResponseMetadata(url: url, statusCode: 200, contentType: "image/jpeg")), for: url)
        let cache = CachesManager([
            MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: directory)),
        ])
        let manager = ImageManager(cache: cache, loader: loader)
        func load(_ side: Int) async throws -> ImageResult {
            var context = ImageContext()
            context.imageTransformer = ResizeTransformer(width: side, height: side)
            return try await manager.loadImage(with: url, options: .waitStoreCache, context: context)
        }
        let large = try await load(200)
        #expect(large.image.width == 200 && large.image.height == 150)
        #expect(large.cacheType == .none)
        let small = try await load(64)
        #expect(small.image.width == 64 && small.image.height == 48)
        #expect(small.cacheType == .disk, "made from the original stored on disk")
        #expect(try await load(200).cacheType == .memory)
        #expect(loader.requestCount == 1, "downloaded once")
        #expect(large.cacheKey != small.cacheKey)
        let serialized = try await cache.queryImage(forKey: try #require(small.cacheKey), cacheType: .disk)
        #expect(serialized != nil, "the transformed variant was encoded by the serializer and stored on disk")
    }
}
