import Foundation
import ImageCore
import ImageTestSupport
import JPEGCoder
import Testing

/// Incremental decoding: partial previews from prefixes, final image equal to a full decode.
@Suite struct JPEGIncrementalTests {
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
    func finalEqualsFullDecode(progressive: Bool) throws {
        var state: UInt32 = 11
        var pixels = JPEGSamples.gradient(width: 320, height: 240)
        pixels.withUnsafeMutableBytes { bytes in
            for i in bytes.indices where i % 5 == 0 {  // texture so the file has some size
                state = state &* 1_664_525 &+ 1_013_904_223
                bytes[i] = UInt8(truncatingIfNeeded: state >> 24)
            }
        }
        let data = try JPEGCoder.shared.encode(
            Image(pixels: pixels), as: .jpeg, options: ImageEncodeOptions(quality: 0.9, progressive: progressive))
        let (partials, final) = try Self.feed(
            data, chunk: 2048, decoder: JPEGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions()))
        #expect(!partials.isEmpty)
        #expect(partials.allSatisfy { $0.metadata.isPartial && $0.width == 320 && $0.height == 240 })
        let full = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions())
        let image = try #require(final)
        #expect(!image.metadata.isPartial)
        #expect(image.pixels == full.pixels)
        // Previews get better as bytes arrive.
        if let first = partials.first, let last = partials.last, partials.count > 1 {
            #expect(JPEGSamples.psnr(last.pixels, full.pixels) >= JPEGSamples.psnr(first.pixels, full.pixels))
        }
    }

    @Test func throughCodersManagerWithThumbnail() throws {
        let manager = CodersManager(coders: [JPEGCoder.shared])
        let data = try JPEGCoder.shared.encode(
            Image(pixels: JPEGSamples.gradient(width: 400, height: 200)), as: .jpeg,
            options: ImageEncodeOptions(progressive: true))
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 100, height: 100))
        let (partials, final) = try Self.feed(
            data, chunk: 500, decoder: manager.makeIncrementalDecoder(options: options))
        #expect(partials.allSatisfy { $0.width == 100 && $0.height == 50 })
        #expect(try #require(final).pixels == (try JPEGCoder.shared.decode(data, options: options)).pixels)
    }

    @Test func truncatedHeaderFinalThrows() throws {
        let data = try JPEGCoder.shared.encode(
            Image(pixels: JPEGSamples.gradient(width: 64, height: 64)), as: .jpeg, options: ImageEncodeOptions())
        let decoder = JPEGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        decoder.update(data.prefix(30), isFinal: false)
        #expect(try decoder.currentImage() == nil)
        decoder.update(data.prefix(30), isFinal: true)
        #expect(throws: ImageError.self) { try decoder.currentImage() }
    }
}
