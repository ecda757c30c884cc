import Foundation
import ImageCore
import ImageTestSupport
import JPEGCoder
import Testing

/// Issue 32, defect 12: the first bytes of a JPEG decode (libjpeg fills in what is missing), so the image must say it
/// is incomplete. Every cut of generated files, baseline and progressive, at full size and as a DCT-scaled thumbnail,
/// one-shot and through the incremental decoder (``TruncationCheck``; `TRUNCATION_SEED` replays a run).
@Suite struct JPEGTruncationTests {
    @Test(arguments: [false, true])
    func cutFilesAreRejectedOrMarkedIncomplete(progressive: Bool) throws {
        let thumbnail = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 24, height: 24))
        let tallies = try TruncationCheck.run(
            "JPEG progressive \(progressive)", coder: JPEGCoder.shared, optionSets: [ImageDecodeOptions(), thumbnail]
        ) { rng in
            let picture = TruncationCheck.picture(width: 120, height: 80, layout: .rgb8, seed: rng.next())
            return try JPEGCoder.shared.encode(
                Image(pixels: picture), as: .jpeg, options: ImageEncodeOptions(quality: 0.9, progressive: progressive))
        }
        for tally in tallies {
            #expect(tally.violations.isEmpty, "\(tally)")
            #expect(tally.flagged > tally.rejected, "libjpeg decodes most cuts: they must be the flagged ones")
        }
    }

    /// The defect as reported: the first tenth of a photo-sized JPEG decodes with grey rows.
    @Test func theFirstTenthOfALargeJPEGIsMarkedIncomplete() throws {
        let picture = TruncationCheck.picture(width: 640, height: 480, layout: .rgb8, seed: 12)
        let data = try JPEGCoder.shared.encode(Image(pixels: picture), as: .jpeg, options: ImageEncodeOptions())
        let image = try JPEGCoder.shared.decode(data.prefix(data.count / 10), options: ImageDecodeOptions())
        #expect(image.width == 640 && image.metadata.isIncomplete && !image.metadata.isPartial)
        #expect(try !JPEGCoder.shared.decode(data, options: ImageDecodeOptions()).metadata.isIncomplete)
    }

    /// Bytes after EOI are not the image: a complete file with trailing garbage is complete; one whose EOI is
    /// missing is not.
    @Test func onlyTheEndOfImageMarkerDecides() throws {
        let data = try JPEGCoder.shared.encode(
            Image(pixels: TruncationCheck.picture(width: 32, height: 32, layout: .rgb8, seed: 5)), as: .jpeg,
            options: ImageEncodeOptions())
        #expect(data.suffix(2) == Data([0xFF, 0xD9]))
        var trailing = data
        trailing.append(contentsOf: [0x00, 0xFF, 0x12, 0x34])
        #expect(try !JPEGCoder.shared.decode(trailing, options: ImageDecodeOptions()).metadata.isIncomplete)
        #expect(try JPEGCoder.shared.decode(data.dropLast(2), options: ImageDecodeOptions()).metadata.isIncomplete)
    }
}
