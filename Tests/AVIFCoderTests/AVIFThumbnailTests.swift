import Foundation
import ImageCore
import ImageTestSupport
import Testing

@testable import AVIFCoder

/// Shrink-on-load: an AVIF thumbnail converts YUV to RGB a strip at a time and reduces it on the way; it must
/// equal, byte for byte, the whole-frame conversion (with `clap`/`irot`/`imir` applied) followed by
/// `areaResampled`, and never hold full-size RGB.
@Suite("AVIF thumbnails", .enabled(if: AVIFCorpus.shouldRun, "no corpus-avif (set IMAGE_CORPUS_AVIF)"))
struct AVIFThumbnailTests {
    @Test(
        "every corpus AVIF (4:2:0, 4:2:2, 4:4:4, monochrome, 8–12 bits, alpha, odd sizes, transforms) matches the full conversion",
        arguments: ["avif/av1-avif", "avif/libavif-test-data", "avif/link-u", "avif/mp4parse-rust"])
    func corpusMatchesFullConversion(folder: String) throws {
        try #require(AVIFCorpus.isAvailable, "REQUIRE_CORPUS=1 but corpus-avif is missing")
        var compared = 0
        for row in AVIFCorpus.expectations(under: folder) where row.verdict == .ok && row.width > 2 && row.height > 2 {
            let data = try Data(contentsOf: row.url)
            var storedUpright = false
            for applyOrientation in [true, false] {
                // Without `irot`, `imir` or a cropping `clap` the stored pixels are the displayed ones: the same
                // decode, compared once.
                if !applyOrientation && storedUpright { continue }
                let plain = ImageDecodeOptions(firstFrameOnly: true, applyOrientation: applyOrientation)
                guard let full = try? AVIFCoder.shared.decode(data, options: plain) else { continue }
                storedUpright =
                    full.metadata.sourceOrientation == .up && full.metadata.sourcePixelWidth == full.width
                    && full.metadata.sourcePixelHeight == full.height
                for size in [PixelSize(width: full.width / 3, height: full.height / 3), PixelSize(width: 5, height: 3)]
                where size.width > 0 && size.height > 0 {
                    var options = plain
                    options.thumbnailPixelSize = size
                    options.preserveAspectRatio = size.width != 5
                    let target = options.targetSize(forSourceWidth: full.width, height: full.height)
                    let thumbnail = try AVIFCoder.shared.decode(data, options: options)
                    let expected = full.pixels.areaResampled(width: target.width, height: target.height)
                    #expect(thumbnail.pixels == expected, "\(row) orientation \(applyOrientation) → \(target)")
                    compared += 1
                }
            }
        }
        #expect(compared > 0)
        print("AVIF thumbnails \(folder): \(compared) compared with the full conversion")
    }

    @Test("a large thumbnail converts strips of rows, never the whole frame")
    func holdsStripsNotTheFrame() throws {
        try #require(AVIFCoder.hasEncoder)
        let (width, height) = (1024, 1024)
        let source = rgbaImage(width: width, height: height, alpha: true)
        let data = try AVIFCoder.shared.encode(
            source, as: .avif, options: ImageEncodeOptions(quality: 0.5, effort: .fast))
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 100, height: 100))
        let reader = try AVIFCoder.shared.open(data, options: options)
        let frame = try reader.frame(at: 0, duration: 0)
        #expect(frame.pixels.width == 100 && frame.pixels.height == 100)
        let report = try #require(reader.lastStripReport)
        #expect(report.stripBytes < width * height * 4 / 4, "strip of \(report.stripBytes) bytes")
        let full = try AVIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(frame.pixels == full.pixels.areaResampled(width: 100, height: 100))
    }
}
