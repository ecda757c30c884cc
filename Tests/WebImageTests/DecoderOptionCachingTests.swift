import Foundation
import ImageTestSupport
import Testing
import WebImage

/// Options that act inside the decoder are never served from another decode's pixels: a load that keeps the EXIF
/// orientation raw, made after a plain load of the same JPEG put the turned image in memory, gets the stored
/// (unturned) pixels — decoded from the original's bytes, not taken from the memory entry.
@Suite struct DecoderOptionCachingTests {
    /// A 40x20 JPEG whose EXIF orientation says "turn right": shown 20x40, stored 40x20.
    static func turnedJPEG() throws -> Data {
        var bytes = [UInt8](repeating: 0, count: 40 * 20 * 3)
        for index in stride(from: 0, to: bytes.count, by: 3) { bytes[index] = UInt8(index % 251) }
        let pixels = PixelBuffer(width: 40, height: 20, layout: .rgb8, bytes: bytes)
        let image = Image(
            frames: [ImageFrame(pixels: pixels)], format: .jpeg, metadata: ImageMetadata(orientation: .right))
        return try JPEGCoder.shared.encode(image, as: .jpeg, options: ImageEncodeOptions(quality: 0.9))
    }

    @Test(
        "a raw-orientation load after a plain one decodes the original's bytes",
        arguments: [false, true])
    func rawOrientationAfterAPlainLoad(thumbnail: Bool) async throws {
        let directory = CacheFixtures.temporaryDirectory("raw-orientation")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "https://origin.example/turned.jpg")!
        let loader = ScriptedLoader(acceptsAll: true)
        loader.set(.data(try Self.turnedJPEG(), ResponseMetadata(url: url, statusCode: 200)), for: url)
        let manager = ImageManager(
            cache: CachesManager([
                MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: directory)),
            ]), loader: loader, coders: CodersManager(coders: [JPEGCoder.shared]))
        let shown = try await manager.loadImage(with: url, options: .waitStoreCache)
        #expect(shown.image.width == 20 && shown.image.height == 40)
        var context = ImageContext()
        context.imageDecodeOptions = ImageDecodeOptions(applyOrientation: false)
        if thumbnail { context.imageThumbnailPixelSize = PixelSize(width: 40, height: 40) }
        let raw = try await manager.loadImage(with: url, context: context)
        #expect(raw.image.width == 40 && raw.image.height == 20, "the stored orientation, not the turned pixels")
        #expect(raw.image.metadata.orientation == .right)
        #expect(loader.requestCount == 1, "the original's bytes came from the disk entry")
    }
}
