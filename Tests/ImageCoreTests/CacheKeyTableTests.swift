import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// One test per row of the key table in ARCHITECTURE.md: every option that changes the image is a key part or
/// makes the load skip the level that can't honour it; a cached result is never transformed again; what is stored
/// under a key decodes to what the key means.
@Suite struct CacheKeyTableTests {
    private let red = RGBAColor(red: 200, green: 10, blue: 10)

    private func firstPixel(_ image: Image) -> [UInt8] { Array(image.pixels.pixel(x: 0, y: 0)) }

    /// Decodes what the rig's disk level holds under `key`.
    private func diskImage(_ rig: Rig, _ key: String) throws -> Image? {
        try rig.cache.diskData(forKey: key).map { try TestCoder().decode($0, options: ImageDecodeOptions()) }
    }

    // MARK: Transformer (key part)

    @Test func aTransformedDiskHitIsNotTransformedAgain() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 10, height: 10)
        let grow = CompoundingTransformer(.grow(2))
        let first = try await rig.load(url, options: .waitStoreCache, context: [.imageTransformer: grow]).get()
        #expect(first.image.width == 12 && first.cacheType == .none)
        await rig.cache.clear(cacheType: .memory)
        let second = try await rig.load(url, context: [.imageTransformer: grow]).get()
        #expect(second.cacheType == .disk)
        #expect(second.image.width == 12 && second.image.height == 12, "a 10x10 grown by 2 once is 12x12, not 14x14")
        #expect(grow.callCount == 1)
        #expect(rig.loader.requestCount == 1)
    }

    @Test func anInvertedDiskHitKeepsItsColour() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(TestCoder.data(width: 4, height: 4, colors: [red]), ResponseMetadata(url: url, statusCode: 200)),
            for: url)
        let invert = CompoundingTransformer(.invert)
        let first = try await rig.load(url, options: .waitStoreCache, context: [.imageTransformer: invert]).get()
        #expect(firstPixel(first.image) == [55, 245, 245, 255])
        await rig.cache.clear(cacheType: .memory)
        let second = try await rig.load(url, context: [.imageTransformer: invert]).get()
        #expect(second.cacheType == .disk)
        #expect(firstPixel(second.image) == [55, 245, 245, 255], "inverting twice would give the original colour")
    }

    @Test func aProductMadeFromTheCachedOriginalIsTransformedOnceAndStoredAsTheProduct() async throws {
        let rig = Rig()
        let url = testURL()
        rig.cache.seedDisk(TestCoder.data(width: 10, height: 10), forKey: url.absoluteString)
        let grow = CompoundingTransformer(.grow(2))
        let first = try await rig.load(url, options: .waitStoreCache, context: [.imageTransformer: grow]).get()
        #expect(first.image.width == 12 && rig.loader.requestCount == 0)
        let key = try #require(first.cacheKey)
        #expect(try diskImage(rig, key)?.width == 12, "the derived entry holds the product")
        await rig.cache.clear(cacheType: .memory)
        let second = try await rig.load(url, context: [.imageTransformer: grow]).get()
        #expect(second.image.width == 12 && grow.callCount == 1)
    }

    // MARK: Thumbnail size and aspect ratio (key parts)

    @Test func aThumbnailIsStoredAsTheThumbnailNotTheFullBytes() async throws {
        let rig = Rig()
        let url = testURL()
        let full = rig.serve(url, width: 40, height: 20)
        let thumbnail = PixelSize(width: 10, height: 10)
        let result = try await rig.load(url, options: .waitStoreCache, context: [.imageThumbnailPixelSize: thumbnail])
            .get()
        #expect(result.image.width == 10 && result.image.height == 5)
        #expect(result.data == nil, "the full-size bytes don't decode to the thumbnail")
        let key = try #require(result.cacheKey)
        #expect(key.contains("thumbnail(10x10,fit)"))
        #expect(rig.cache.diskData(forKey: url.absoluteString) == full, "the original is stored as downloaded")
        #expect(try diskImage(rig, key)?.width == 10, "the thumbnail key's bytes decode to the thumbnail")
        await rig.cache.clear(cacheType: .memory)
        let again = try await rig.load(url, context: [.imageThumbnailPixelSize: thumbnail]).get()
        #expect(again.cacheType == .disk && again.image.width == 10 && again.image.height == 5)
        let plain = try await rig.load(url).get()
        #expect(plain.image.width == 40, "the full-size load is not served the thumbnail")
        #expect(rig.loader.requestCount == 1)
    }

    @Test func thumbnailsFromDecodeOptionsAndFillModeAreKeyParts() throws {
        let manager = Rig().manager
        let url = URL(string: "https://example.com/a.jpg")!
        var decode = ImageDecodeOptions()
        decode.thumbnailPixelSize = PixelSize(width: 64, height: 64)
        let viaOptions = manager.cacheKey(for: url, context: ImageContext([.imageDecodeOptions: decode]))
        let viaContext = manager.cacheKey(
            for: url, context: ImageContext([.imageThumbnailPixelSize: PixelSize(width: 64, height: 64)]))
        let fill = manager.cacheKey(
            for: url,
            context: ImageContext([
                .imageThumbnailPixelSize: PixelSize(width: 64, height: 64), .imagePreserveAspectRatio: false,
            ]))
        #expect(viaOptions == viaContext)
        #expect(viaOptions == "https://example.com/a.jpg thumbnail(64x64,fit) .jpg")
        #expect(fill == "https://example.com/a.jpg thumbnail(64x64,fill) .jpg")
    }

    @Test func rawOrientationIsAKeyPart() {
        let manager = Rig().manager
        let url = URL(string: "https://example.com/a.jpg")!
        var raw = ImageDecodeOptions()
        raw.applyOrientation = false
        #expect(
            manager.cacheKey(for: url, context: ImageContext([.imageDecodeOptions: raw]))
                == "https://example.com/a.jpg orientation(raw) .jpg")
        #expect(manager.cacheKey(for: url) == "https://example.com/a.jpg")
    }

    // MARK: First frame only (key part)

    @Test func firstFrameOnlyGetsTheFirstFrameOfACachedAnimationAndNeverStoresAStillUnderItsKey() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(
                TestCoder.data(width: 6, height: 6, colors: [red, .white, .black]),
                ResponseMetadata(url: url, statusCode: 200)), for: url)
        let still = try await rig.load(url, options: [.decodeFirstFrameOnly, .waitStoreCache]).get()
        #expect(still.image.frameCount == 1)
        #expect(rig.cache.memoryImage(forKey: url.absoluteString) == nil, "a still must not stand for the animation")
        let animated = try await rig.load(url, options: .waitStoreCache).get()
        #expect(animated.image.frameCount == 3)
        #expect(rig.cache.memoryImage(forKey: url.absoluteString)?.frameCount == 3)
        let fromMemory = try await rig.load(url, options: .decodeFirstFrameOnly).get()
        #expect(fromMemory.cacheType == .memory && fromMemory.image.frameCount == 1)
        #expect(firstPixel(fromMemory.image) == [200, 10, 10, 255])
        #expect(rig.loader.requestCount == 1)
    }

    @Test func firstFrameOnlyIsAKeyPartSoAnAnimationsFirstFrameIsCachedUnderIt() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(
                TestCoder.data(width: 6, height: 6, colors: [red, .white, .black]),
                ResponseMetadata(url: url, statusCode: 200)), for: url)
        let grow = CompoundingTransformer(.grow(2))
        let context: [ImageContextOption: any Sendable] = [.imageTransformer: grow]
        let first = try await rig.load(url, options: [.decodeFirstFrameOnly, .waitStoreCache], context: context).get()
        #expect(first.image.frameCount == 1 && first.image.width == 8 && first.cacheType == .none)
        let key = try #require(first.cacheKey)
        #expect(key.contains(" frames(first) "), "\(key)")
        #expect(key == rig.manager.cacheKey(for: url, options: .decodeFirstFrameOnly, context: rig.context(context)))
        #expect(key != rig.manager.cacheKey(for: url, context: rig.context(context)), "the animation's key differs")
        let again = try await rig.load(url, options: .decodeFirstFrameOnly, context: context).get()
        #expect(again.cacheType == .memory && again.image.width == 8)
        await rig.cache.clear(cacheType: .memory)
        let fromDisk = try await rig.load(url, options: .decodeFirstFrameOnly, context: context).get()
        #expect(fromDisk.cacheType == .disk && fromDisk.image.frameCount == 1 && fromDisk.image.width == 8)
        #expect(grow.callCount == 1, "decoded and transformed once")
        #expect(rig.coder.decodeCount == 2, "the download, then the derived disk entry")
        #expect(rig.loader.requestCount == 1)
    }

    @Test func theFirstFrameOfAStillSourceIsStoredAsTheOriginalBytes() async throws {
        let rig = Rig()
        let url = testURL()
        let bytes = rig.serve(url, width: 5, height: 5)
        let result = try await rig.load(url, options: [.decodeFirstFrameOnly, .waitStoreCache]).get()
        #expect(result.data == bytes, "the decode observed one frame: the bytes decode to exactly this image")
        let key = try #require(result.cacheKey)
        #expect(rig.cache.memoryImage(forKey: key) != nil)
        #expect(rig.cache.diskData(forKey: key) == bytes, "no re-encode of a still")
        #expect(rig.cache.diskData(forKey: url.absoluteString) == bytes, "the original as downloaded")
        let again = try await rig.load(url, options: .decodeFirstFrameOnly).get()
        #expect(again.cacheType == .memory)
        #expect(rig.loader.requestCount == 1)
    }

    // MARK: Scale-down budget (bypass)

    @Test func aScaleDownLoadIsNotServedALargerCachedImageNorStoresItsSmallerOne() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 100, height: 100)
        let small: [ImageContextOption: any Sendable] = [.imageScaleDownLimitBytes: 20 * 20 * 4]
        let scaled = try await rig.load(url, options: [.scaleDownLargeImages, .waitStoreCache], context: small).get()
        #expect(scaled.image.width <= 20 && scaled.image.height <= 20)
        #expect(rig.cache.memoryImage(forKey: url.absoluteString) == nil, "a scaled image must not stand for the key")
        let full = try await rig.load(url, options: .waitStoreCache).get()
        #expect(full.image.width == 100, "served the original bytes from disk, not the scaled image")
        let again = try await rig.load(url, options: .scaleDownLargeImages, context: small).get()
        #expect(again.image.width <= 20, "the 100x100 memory entry is over this load's budget")
        #expect(rig.loader.requestCount == 1)
    }

    // MARK: Animated images and transformers (bypass)

    @Test func transformAnimatedImageDecidesWhatATransformedKeyServes() async throws {
        let rig = Rig()
        let url = testURL()
        rig.loader.set(
            .data(
                TestCoder.data(width: 6, height: 6, colors: [red, .white]), ResponseMetadata(url: url, statusCode: 200)),
            for: url)
        let grow = CompoundingTransformer(.grow(4))
        let context: [ImageContextOption: any Sendable] = [.imageTransformer: grow]
        let untransformed = try await rig.load(url, options: .waitStoreCache, context: context).get()
        #expect(untransformed.image.width == 6 && untransformed.image.frameCount == 2)
        let key = try #require(untransformed.cacheKey)
        #expect(rig.cache.memoryImage(forKey: key) == nil, "the untransformed animation is not what the key means")
        let transformed = try await rig.load(
            url, options: [.transformAnimatedImage, .waitStoreCache], context: context
        )
        .get()
        #expect(transformed.image.width == 10 && transformed.image.frameCount == 2)
        #expect(rig.cache.memoryImage(forKey: key)?.width == 10)
        let withoutOption = try await rig.load(url, context: context).get()
        #expect(withoutOption.image.width == 6, "without the option the animation stays untransformed")
        await rig.cache.clear(cacheType: .memory)
        let fromDisk = try await rig.load(url, context: context).get()
        #expect(fromDisk.image.width == 6, "nor from the transformed key's disk entry")
        #expect(rig.loader.requestCount == 1)
    }

    // MARK: Partition and credentials

    @Test func aPartitionKeyPartitionsTheKeyAndTheOriginal() {
        let manager = Rig().manager
        let url = URL(string: "https://example.com/a.png")!
        let key = manager.cacheKey(for: url, context: ImageContext([.cachePartitionKey: "tenant-7"]))
        #expect(key == "https://example.com/a.png partition(tenant-7) .png")
    }

    @Test func aLoadWithARequestModifierSharesNoCacheEntryWithoutAPartition() async throws {
        let rig = Rig()
        let url = testURL()
        rig.serve(url, width: 8, height: 8)
        rig.cache.seedMemory(
            try TestCoder().decode(TestCoder.data(width: 3, height: 3), options: ImageDecodeOptions()),
            forKey: url.absoluteString)
        let modifier = BlockRequestModifier { request in
            var request = request
            request[header: "Authorization"] = "Bearer alice"
            return request
        }
        let privateLoad = try await rig.load(
            url, options: .waitStoreCache, context: [.downloadRequestModifier: modifier]
        ).get()
        #expect(privateLoad.image.width == 8, "not served another caller's cached image")
        #expect(privateLoad.cacheKey == nil)
        #expect(rig.cache.memoryImage(forKey: url.absoluteString)?.width == 3, "and its image is not stored for others")
        let partitioned = try await rig.load(
            url, options: .waitStoreCache, context: [.downloadRequestModifier: modifier, .cachePartitionKey: "alice"]
        ).get()
        #expect(partitioned.cacheKey?.contains("partition(alice)") == true)
        #expect(rig.cache.memoryImage(forKey: try #require(partitioned.cacheKey))?.width == 8)
    }
}
