import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Incremental decoding with libpng's progressive reader: partial previews, final image equal to a full decode.
@Suite struct PNGIncrementalTests {
    /// Feeds `data` in `chunk`-byte steps; returns the partial images seen and the final image.
    static func feed(_ data: Data, chunk: Int, decoder: any IncrementalImageDecoder) throws -> (
        partials: [Image], final: Image?
    ) {
        var partials: [Image] = []
        var end = 0
        while end < data.count {
            end = min(data.count, end + chunk)
            decoder.update(data.prefix(end), isFinal: end == data.count)
            if end < data.count, let image = try decoder.currentImage() { partials.append(image) }
        }
        return (partials, try decoder.currentImage())
    }

    @Test(arguments: [false, true])
    func finalEqualsFullDecode(interlaced: Bool) throws {
        let pixels = PNGEncodeTests.buffer(.rgba8, width: 64, height: 64)
        let data = try PNGCoder.shared.encode(
            Image(pixels: pixels), as: .png, options: ImageEncodeOptions(effort: .fast, progressive: interlaced))
        let (partials, final) = try Self.feed(
            data, chunk: 1024, decoder: PNGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions()))
        #expect(!partials.isEmpty)
        for partial in partials {
            #expect(partial.metadata.isPartial)
            #expect(partial.width == 64 && partial.height == 64)
        }
        let full = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        let image = try #require(final)
        #expect(!image.metadata.isPartial)
        #expect(image.pixels == full.pixels)
        // Non-interlaced rows arrive top-down: the first half of a half-fed image matches the final image.
        if !interlaced, let mid = partials.last {
            let row = mid.pixels.bytesPerRow
            #expect(mid.pixels.bytes.prefix(row * 8) == full.pixels.bytes.prefix(row * 8))
        }
    }

    @Test func throughCodersManagerWithThumbnail() throws {
        let manager = CodersManager(coders: [PNGCoder.shared])
        let data = try PNGCoder.shared.encode(
            Image(pixels: PNGEncodeTests.buffer(.rgb8, width: 80, height: 40)), as: .png, options: ImageEncodeOptions())
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 20, height: 20))
        let (partials, final) = try Self.feed(
            data, chunk: 700, decoder: manager.makeIncrementalDecoder(options: options))
        #expect(partials.allSatisfy { $0.width == 20 && $0.height == 10 })
        #expect(try #require(final).pixels == (try PNGCoder.shared.decode(data, options: options)).pixels)
    }

    @Test func budgetRefusedFromHeader() throws {
        let decoder = PNGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        decoder.update(PNGFixtures.headerOnly(width: 60_000, height: 60_000).prefix(40), isFinal: false)
        let error = try #require(throws: ImageError.self) { try decoder.currentImage() }
        #expect(error.code == .imageTooLarge)
    }

    @Test func truncatedFinalThrows() throws {
        let data = try PNGCoder.shared.encode(
            Image(pixels: PNGEncodeTests.buffer(.rgb8)), as: .png, options: ImageEncodeOptions())
        let decoder = PNGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        decoder.update(data.prefix(data.count / 2), isFinal: false)
        _ = try decoder.currentImage()
        decoder.update(data.prefix(data.count / 2), isFinal: true)
        #expect(throws: ImageError.self) { try decoder.currentImage() }
    }
}
