import AVIFCoder
import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import JXLCoder
import PNGCoder
import Testing
import WebPCoder

/// Issue 32, item 7: every coder's incremental decoder is ImageCore's scaffold around the coder's step, so for
/// every coder, feeding a file's bytes in any chunking gives exactly the one-shot decode, every preview before
/// that is partial (never incomplete), and nothing but an ``ImageError`` is thrown. Random split points over
/// generated files of each kind; seed printed (`CHUNKING_SEED` replays it).
@Suite struct IncrementalChunkingTests {
    struct Sample: CustomStringConvertible, Sendable {
        var name: String
        var coder: any ProgressiveImageCoder
        var data: Data
        var description: String { "\(name) (\(data.count) bytes)" }
    }

    /// A generated file of each kind: name, coder, format, frames, layout, encode options.
    static let kinds: [(String, any ProgressiveImageCoder, ImageFormat, Int, PixelLayout, ImageEncodeOptions)] = [
        ("PNG", PNGCoder.shared, .png, 1, .rgba8, .init()),
        ("PNG interlaced", PNGCoder.shared, .png, 1, .rgb8, .init(progressive: true)),
        ("APNG", PNGCoder.shared, .png, 3, .rgba8, .init()),
        ("JPEG baseline", JPEGCoder.shared, .jpeg, 1, .rgb8, .init()),
        ("JPEG progressive", JPEGCoder.shared, .jpeg, 1, .rgb8, .init(progressive: true)),
        ("WebP lossy", WebPCoder.shared, .webp, 1, .rgb8, .init()),
        ("WebP lossless", WebPCoder.shared, .webp, 1, .rgba8, .init(lossless: true)),
        ("WebP animated", WebPCoder.shared, .webp, 3, .rgba8, .init()),
        ("GIF", GIFCoder.shared, .gif, 1, .rgba8, .init()),
        ("GIF animated", GIFCoder.shared, .gif, 3, .rgba8, .init()),
        ("JPEG XL lossless", JXLCoder.shared, .jxl, 1, .rgba8, .init(lossless: true)),
        ("JPEG XL progressive", JXLCoder.shared, .jxl, 1, .rgb8, .init(progressive: true)),
        ("JPEG XL animated", JXLCoder.shared, .jxl, 3, .rgba8, .init(lossless: true)),
        ("AVIF", AVIFCoder.shared, .avif, 1, .rgba8, .init(effort: .fast)),
    ]

    static func samples() throws -> [Sample] {
        try kinds.enumerated().compactMap { index, kind in
            let (name, coder, format, frameCount, layout, options) = kind
            guard coder.canEncode(to: format) else { return nil }  // AVIF without an AV1 encoder
            let image = TruncationCheck.image(
                frames: frameCount, width: 64, height: 48, layout: layout, seed: UInt64(index * 8))
            return Sample(
                name: name, coder: coder, data: try coder.encode(image, as: format, options: options))
        }
    }

    @Test func anyChunkingGivesTheOneShotDecode() throws {
        let seed = SplitMix64.seed(from: "CHUNKING_SEED", label: "incremental chunking")
        var rng = SplitMix64(seed: seed)
        var thumbnail = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 20, height: 20))
        thumbnail.preserveAspectRatio = false
        for sample in try Self.samples() {
            for options in [ImageDecodeOptions(), thumbnail] {
                let oneShot = try sample.coder.decode(sample.data, options: options)
                var previews = 0
                for _ in 0..<25 {
                    let splits = (0..<Int(rng.next() % 12)).map { _ in Int(rng.next() % UInt64(sample.data.count + 1)) }
                        .sorted()
                    let decoder = sample.coder.makeIncrementalDecoder(options: options)
                    for end in splits {
                        decoder.update(sample.data.prefix(end), isFinal: false)
                        do {
                            guard let preview = try decoder.currentImage() else { continue }
                            previews += 1
                            #expect(
                                preview.metadata.isPartial && !preview.metadata.isIncomplete,
                                "seed \(seed), \(sample), splits \(splits): a preview at \(end) is not partial")
                            #expect(preview.width == oneShot.width && preview.height == oneShot.height)
                        } catch {
                            #expect(error is ImageError, "seed \(seed), \(sample): \(error)")
                        }
                    }
                    decoder.update(sample.data, isFinal: true)
                    let final = try #require(try decoder.currentImage())
                    #expect(
                        TruncationCheck.sameImage(final, oneShot) && final.metadata == oneShot.metadata,
                        "seed \(seed), \(sample), splits \(splits): the final image is not the one-shot decode")
                }
                print("\(sample), thumbnail \(options.thumbnailPixelSize != nil): \(previews) previews in 25 chunkings")
            }
        }
    }
}
