import Foundation
import ImageTestSupport
import Testing
import WebImage

/// Issue 32's defects where an option meets an older stage, each reproduced through the public API as a user would meet
/// it (each fails on c19952b, checked by running them there): a per-request option blocking a URL for everyone (1), a
/// decoded original serving a decoder-side option (2), previews skipping the steps after the coder (3), and a derived
/// key reading back other pixels than its first load delivered (13).
@Suite struct SeamDefectTests {
    static let registered: Void = ColorConversion.register(LCMSColorConverter.shared)

    /// Pixels that are not flat (so a lossy encode or a wrong conversion shows).
    static func noise(width: Int, height: Int, layout: PixelLayout = .rgb8, seed: UInt64 = 7) -> PixelBuffer {
        var random = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: width * height * layout.bytesPerPixel)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next() >> 56) }
        return PixelBuffer(width: width, height: height, layout: layout, bytes: bytes)
    }

    static func manager(
        _ loader: ScriptedLoader, directory: URL? = nil, coders: [any ImageCoder]
    ) -> ImageManager {
        var levels: [any ImageCacheProtocol] = [MemoryCache()]
        if let directory { levels.append(DiskCache(configuration: DiskCacheConfiguration(directory: directory))) }
        return ImageManager(cache: CachesManager(levels), loader: loader, coders: CodersManager(coders: coders))
    }

    static func failure(_ body: () async throws -> ImageResult) async -> ImageError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? ImageError
        }
    }

    // MARK: 1. A per-request option never blocks a URL for everyone

    @Test("a thumbnail scaled up past the budget fails that load only; a plain load of the URL still succeeds")
    func upscalingPastTheBudgetBlocksNobody() async throws {
        let url = URL(string: "https://origin.example/small.png")!
        let loader = ScriptedLoader(acceptsAll: true)
        let png = try PNGCoder.shared.encode(
            Image(pixels: Self.noise(width: 40, height: 30), format: .png), as: .png, options: ImageEncodeOptions())
        loader.set(.data(png, ResponseMetadata(url: url, statusCode: 200)), for: url)
        let manager = Self.manager(loader, coders: [PNGCoder.shared])
        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(
            thumbnailPixelSize: PixelSize(width: 40_000, height: 30_000), allowsThumbnailUpscaling: true)
        let refused = await Self.failure { try await manager.loadImage(with: url, context: context) }
        #expect(refused?.code == .imageTooLarge)
        #expect(!manager.isFailedURL(url), "a verdict of this load's own options")
        let plain = try await manager.loadImage(with: url)
        #expect(plain.image.width == 40 && plain.image.height == 30)
    }

    /// A JPEG whose ICC profile has a valid header (RGB, display class) and nothing a colour engine can use.
    static func jpegWithUnusableProfile() throws -> Data {
        var profile = [UInt8](repeating: 0, count: 132)
        profile[3] = 132
        profile.replaceSubrange(12..<16, with: Array("mntr".utf8))
        profile.replaceSubrange(16..<20, with: Array("RGB ".utf8))
        profile.replaceSubrange(20..<24, with: Array("XYZ ".utf8))
        profile.replaceSubrange(36..<40, with: Array("acsp".utf8))
        let image = Image(
            pixels: Self.noise(width: 32, height: 24), format: .jpeg, metadata: ImageMetadata(iccProfile: profile))
        return try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9))
    }

    @Test("a colour conversion that fails on a profile fails that load only; a plain load still succeeds")
    func unusableProfileBlocksNobody() async throws {
        _ = Self.registered
        let url = URL(string: "https://origin.example/tagged.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(try Self.jpegWithUnusableProfile(), ResponseMetadata(url: url, statusCode: 200)), for: url)
        let manager = Self.manager(loader, coders: [JPEGCoder.shared])
        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(convertToSRGB: true)
        let refused = await Self.failure { try await manager.loadImage(with: url, context: context) }
        #expect(refused?.code == .badImageData)
        #expect(!manager.isFailedURL(url))
        let plain = try await manager.loadImage(with: url)
        #expect(plain.image.width == 32)
    }

    // MARK: 2. The same key, the same pixels, whatever loaded before

    static let cmykJPEG = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ColorManagementTests/Fixtures/cmyk-adobe.jpg").standardizedFileURL

    @Test("a converted CMYK JPEG loaded after a plain load equals the one a cold manager converts")
    func conversionAfterAPlainLoadMatchesACold() async throws {
        _ = Self.registered
        let url = URL(string: "https://origin.example/press.jpg")!
        let bytes = try Data(contentsOf: Self.cmykJPEG)
        var converting = ImageContext()
        converting.imageDecodeOptions = ImageDecodeOptions(convertToSRGB: true)
        for thumbnail in [nil, PixelSize(width: 24, height: 24)] {
            if let thumbnail { converting.imageThumbnailPixelSize = thumbnail }
            let coldLoader = ScriptedLoader(acceptsAll: true)
            coldLoader.set(.data(bytes, ResponseMetadata(url: url, statusCode: 200)), for: url)
            let cold = try await Self.manager(coldLoader, coders: [JPEGCoder.shared])
                .loadImage(with: url, context: converting)

            let loader = ScriptedLoader(acceptsAll: true)
            loader.set(.data(bytes, ResponseMetadata(url: url, statusCode: 200)), for: url)
            let warm = Self.manager(loader, coders: [JPEGCoder.shared])
            _ = try await warm.loadImage(with: url, options: .waitStoreCache)
            let after = try await warm.loadImage(with: url, context: converting)
            #expect(after.image.pixels.straightRGBABytes() == cold.image.pixels.straightRGBABytes())
            #expect(after.image.metadata.iccProfile == nil)
        }
    }

    // MARK: 3. Previews get the whole decode

    /// A loader that sends a body in `chunks` prefixes, `gap` seconds apart (previews need the bytes to trickle).
    final class TrickleLoader: ImageLoader, Sendable {
        let data: Data
        let chunks: Int
        let gap: Double

        init(data: Data, chunks: Int, gap: Double) {
            self.data = data
            self.chunks = chunks
            self.gap = gap
        }

        func canRequestImage(for url: URL) -> Bool { true }

        func requestImage(
            with url: URL, options: ImageOptions, context: ImageContext,
            progress: (@Sendable (LoadProgress) -> Void)?,
            completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
        ) -> any ImageOperation {
            let operation = CancellableOperation()
            let (data, chunks, gap) = (data, chunks, gap)
            Thread.detachNewThread {
                for index in 1..<chunks {
                    guard !operation.isCancelled else { return completion(.failure(.cancelled())) }
                    let prefix = data.prefix(data.count * index / chunks)
                    progress?(LoadProgress(receivedBytes: prefix.count, expectedBytes: data.count, partialData: prefix))
                    Thread.sleep(forTimeInterval: gap)
                }
                completion(.success(LoadedImageData(data: data, response: ResponseMetadata(url: url, statusCode: 200))))
            }
            return operation
        }
    }

    @Test("previews of a coder named in the context are converted like the final image", arguments: [false, true])
    func previewsOfAContextCoderAreConverted(registered: Bool) async throws {
        _ = Self.registered
        let profile = try Data(
            contentsOf: Self.cmykJPEG.deletingLastPathComponent().appendingPathComponent("adobe-rgb.icc"))
        let image = Image(
            pixels: Self.noise(width: 160, height: 120), format: .jpeg,
            metadata: ImageMetadata(iccProfile: [UInt8](profile)))
        let jpeg = try JPEGCoder.shared.encode(
            image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9, progressive: true))
        let manager = ImageManager(
            cache: CachesManager([]), loader: TrickleLoader(data: jpeg, chunks: 12, gap: 0.03),
            coders: CodersManager(coders: registered ? [JPEGCoder.shared] : []))
        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(convertToSRGB: true)
        if !registered { context.imageCoder = JPEGCoder.shared }
        var previews: [Image] = []
        var final: Image?
        for try await event in manager.imageEvents(
            for: URL(string: "https://origin.example/p.jpg")!, options: .progressiveLoad, context: context)
        {
            switch event {
            case .preview(let result): previews.append(result.image)
            case .completed(let result): final = result.image
            case .progress: break
            }
        }
        #expect(final?.metadata.iccProfile == nil)
        #expect(!previews.isEmpty, "the trickle gives the incremental decoder partial scans")
        for preview in previews {
            #expect(preview.metadata.iccProfile == nil, "a preview keeps the file's profile: not converted")
        }
    }

    // MARK: 12. A truncated image is delivered, marked, and never kept under the whole image's key

    @Test("a JPEG cut short is delivered marked incomplete and cached nowhere", arguments: [false, true])
    func truncatedImageIsNotCached(thumbnail: Bool) async throws {
        let directory = CacheFixtures.temporaryDirectory("truncated")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "https://origin.example/cut.jpg")!
        let whole = try JPEGCoder.shared.encode(
            Image(pixels: Self.noise(width: 256, height: 192), format: .jpeg), as: .jpeg,
            options: ImageEncodeOptions(quality: 0.9))
        let cut = whole.prefix(whole.count / 10)
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(Data(cut), ResponseMetadata(url: url, statusCode: 200)), for: url)
        var context = ImageContext()
        if thumbnail { context.imageThumbnailPixelSize = PixelSize(width: 64, height: 64) }
        let first = try await Self.manager(loader, directory: directory, coders: [JPEGCoder.shared])
            .loadImage(with: url, options: .waitStoreCache, context: context)
        #expect(first.isIncomplete && first.image.width == (thumbnail ? 64 : 256))
        let restarted = Self.manager(loader, directory: directory, coders: [JPEGCoder.shared])
        let again = try await restarted.loadImage(with: url, options: .waitStoreCache, context: context)
        #expect(again.cacheType == .none, "fetched again: nothing of the cut bytes was kept")
        #expect(loader.requestCount == 2)
        #expect(restarted.statistics.incompleteImagesNotStored == 1)

        // The whole file is stored as usual, and a manager that keeps cut bytes keeps them.
        loader.set(.data(whole, ResponseMetadata(url: url, statusCode: 200)), for: url)
        let complete = try await restarted.loadImage(
            with: url, options: [.waitStoreCache, .retryFailed], context: context)
        #expect(!complete.isIncomplete)
        let third = Self.manager(loader, directory: directory, coders: [JPEGCoder.shared])
        #expect(try await third.loadImage(with: url, context: context).cacheType == .disk)
    }

    // MARK: 13. What a later load reads back is what the first delivered

    @Test("a derived WebP thumbnail read back from disk has the pixels its first load delivered")
    func derivedEntryReadsBackTheDeliveredPixels() async throws {
        let directory = CacheFixtures.temporaryDirectory("readback")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "https://origin.example/photo.webp")!
        let webp = try WebPCoder.shared.encode(
            Image(pixels: Self.noise(width: 96, height: 64), format: .webp), as: .webp,
            options: ImageEncodeOptions(quality: 0.8))
        var context = ImageContext()
        context.imageThumbnailPixelSize = PixelSize(width: 48, height: 48)
        let coders: [any ImageCoder] = [WebPCoder.shared, PNGCoder.shared]
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(webp, ResponseMetadata(url: url, statusCode: 200)), for: url)
        let first = try await Self.manager(loader, directory: directory, coders: coders)
            .loadImage(with: url, options: .waitStoreCache, context: context)
        let restarted = Self.manager(loader, directory: directory, coders: coders)
        let again = try await restarted.loadImage(with: url, context: context)
        #expect(again.cacheType == .disk)
        #expect(again.image.width == first.image.width && again.image.height == first.image.height)
        #expect(again.image.pixels.straightRGBABytes() == first.image.pixels.straightRGBABytes())
    }
}

/// Found by the main-line model once it drew every option (seed 8811096149524160869): an animation budget that
/// keeps the first frame (`onExceeded: .firstFrameOnly`) was honoured when a load decoded bytes or hit its own key,
/// but not when a derived load (here: encode options) was served from the decoded original in memory — it got
/// every frame. Every path that serves an image decoded elsewhere now asks one rule
/// (`ImageDecodeOptions.keepsFirstFrameOnly(of:)`).
@Suite struct AnimationBudgetOnDecodedImagesTests {
    @Test(arguments: ["encode options", "transformer", "own key"])
    func aBudgetThatKeepsTheFirstFrameHoldsOnEveryPath(_ path: String) async throws {
        let frames = (0..<3).map { index in
            ImageFrame(
                pixels: PixelBuffer(
                    width: 24, height: 16, layout: .rgba8,
                    bytes: [UInt8](repeating: UInt8(30 + index * 60), count: 24 * 16 * 4)),
                duration: 0.1)
        }
        let coders = CodersManager(coders: [GIFCoder.shared, PNGCoder.shared])
        let gif = try coders.encode(Image(frames: frames), as: .gif, options: ImageEncodeOptions())
        let url = URL(string: "https://origin.example/three.gif")!
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(gif, ResponseMetadata(url: url, statusCode: 200)), for: url)
        let manager = ImageManager(cache: CachesManager([MemoryCache()]), loader: loader, coders: coders)
        // The plain load first: the decoded original (three frames) is in memory.
        let plain = try await manager.loadImage(with: url)
        #expect(plain.image.frameCount == 3)

        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(
            animationBudget: AnimationBudget(maxFrameCount: 2, onExceeded: .firstFrameOnly))
        switch path {
        case "encode options": context.imageEncodeOptions = ImageEncodeOptions(quality: 0.5)
        case "transformer":
            context.imageTransformer = BlockTransformer(key: "identity") { image, _ in image }
        default: break
        }
        let budgeted = try await manager.loadImage(with: url, options: [.transformAnimatedImage], context: context)
        #expect(
            budgeted.image.frameCount == 1, "\(path): \(budgeted.image.frameCount) frames from \(budgeted.cacheType)")
        #expect(loader.requestCount(for: url) == 1, "served from what was decoded, not downloaded again")
        // And the plain load is still the whole animation.
        #expect(try await manager.loadImage(with: url).image.frameCount == 3)
    }
}
