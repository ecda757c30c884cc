import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import JXLCoder
import PNGCoder
import Testing
import WebPCoder

/// Issue 14 item 7: before the caller says the bytes are final, an incremental decoder only hands out previews
/// marked partial, even when it has already seen the whole file; once `isFinal`, the image is the full decode,
/// marked complete. Checked for every coder and for `CodersManager`'s decoder, which enforces it for any coder.
@Suite struct IncrementalContractTests {
    static func sample(_ format: ImageFormat) throws -> Data {
        var bytes: [UInt8] = []
        for y in 0..<24 {
            for x in 0..<32 { bytes += [UInt8(x * 8), UInt8(y * 10), UInt8((x + y) * 4), 255] }
        }
        let pixels = PixelBuffer(width: 32, height: 24, layout: .rgba8, alphaMode: .straight, bytes: bytes)
        let coders = CodersManager(coders: [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, JXLCoder.shared,
        ])
        return try coders.encode(Image(pixels: pixels), as: format, options: .init(progressive: true))
    }

    static let coders: [(ImageFormat, any ProgressiveImageCoder)] = [
        (.png, PNGCoder.shared), (.jpeg, JPEGCoder.shared), (.webp, WebPCoder.shared), (.gif, GIFCoder.shared),
        (.jxl, JXLCoder.shared),
    ]

    @Test(arguments: [ImageFormat.png, .jpeg, .webp, .gif, .jxl])
    func wholeFileBeforeFinalIsStillAPreview(format: ImageFormat) throws {
        let data = try Self.sample(format)
        let coder = try #require(Self.coders.first { $0.0 == format }?.1)
        let registry = CodersManager(coders: [coder])
        for decoder in [
            coder.makeIncrementalDecoder(options: .init()), registry.makeIncrementalDecoder(options: .init()),
        ] {
            decoder.update(data, isFinal: false)
            if let preview = try decoder.currentImage() {
                #expect(preview.metadata.isPartial, "\(format): a preview of the whole file must say it is partial")
            }
            decoder.update(data, isFinal: true)
            let final = try #require(try decoder.currentImage())
            #expect(!final.metadata.isPartial, "\(format): the final image is complete")
            #expect(final.pixels == (try coder.decode(data, options: .init())).pixels)
        }
    }

    /// An APNG: previews are partial, of the first frame (never of a default image that is not part of the
    /// animation), and the final image is the full decode, animation included.
    @Test(arguments: [false, true])
    func animatedPNGPreviewsArePartialAndFinalIsTheAnimation(hiddenDefaultImage: Bool) throws {
        let frames = [[UInt8]([0, 200, 0, 255]), [0, 0, 200, 255]].map {
            APNGFixtures.Frame.solid($0, width: 16, height: 16)
        }
        let hidden = hiddenDefaultImage ? [UInt8](Array(repeating: [200, 0, 0, 255], count: 256).joined()) : nil
        let data = APNGFixtures.file(APNGFixtures.chunks(width: 16, height: 16, frames: frames, defaultImage: hidden))
        let decoder = CodersManager(coders: [PNGCoder.shared]).makeIncrementalDecoder(options: .init())
        for end in stride(from: 40, to: data.count, by: 32) {
            decoder.update(data.prefix(end), isFinal: false)
            guard let preview = try decoder.currentImage() else { continue }
            #expect(preview.metadata.isPartial)
            #expect(!hiddenDefaultImage, "the hidden default image is never previewed")
            #expect(Array(preview.pixels.pixel(x: 0, y: 0)) != [200, 0, 0, 255])
        }
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(!final.metadata.isPartial && final.frameCount == 2)
        #expect(Array(final.pixels.pixel(x: 0, y: 0)) == [0, 200, 0, 255])
    }

    /// A third-party coder that returns a complete-looking image before the end is filtered by the registry.
    @Test func registryDropsUnmarkedPreviewsOfAnyCoder() throws {
        let registry = CodersManager(coders: [EagerCoder()])
        let decoder = registry.makeIncrementalDecoder(options: .init())
        decoder.update(Data("EAGER-half".utf8), isFinal: false)
        #expect(try decoder.currentImage() == nil)
        decoder.update(Data("EAGER-whole".utf8), isFinal: true)
        #expect(try decoder.currentImage()?.metadata.isPartial == false)
    }
}

/// Decodes anything starting with "EAGER" to a 1x1 image never marked partial (the contract violation).
private final class EagerCoder: ProgressiveImageCoder, Sendable {
    func canDecode(_ data: Data) -> Bool { data.starts(with: Data("EAGER".utf8)) }
    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        Image(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8))
    }
    func canEncode(to format: ImageFormat) -> Bool { false }
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data { Data() }
    func probe(_ data: Data) -> ImageProperties? { nil }
    func canIncrementallyDecode(_ data: Data) -> Bool { canDecode(data) }
    func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder { Decoder(coder: self) }

    final class Decoder: IncrementalImageDecoder {
        let coder: EagerCoder
        var data = Data()
        init(coder: EagerCoder) { self.coder = coder }
        func update(_ data: Data, isFinal: Bool) { self.data = data }
        func currentImage() throws -> Image? { try coder.decode(data, options: .init()) }
    }
}
