import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32, defect 12: a GIF cut after a whole frame decodes (a missing trailer is accepted, as browsers do), so
/// the image must say it is incomplete; a GIF cut inside a frame fails. Every cut of a generated still and
/// animation, one-shot and through the incremental decoder (``TruncationCheck``; `TRUNCATION_SEED` replays a run).
@Suite struct GIFTruncationTests {
    static func file(frames: Int, seed: UInt64) throws -> Data {
        let image = TruncationCheck.image(frames: frames, width: 40, height: 30, seed: seed)
        return try GIFCoder.shared.encode(image, as: .gif, options: ImageEncodeOptions())
    }

    @Test(arguments: [1, 4])
    func cutFilesAreRejectedOrMarkedIncomplete(frames: Int) throws {
        var preload = ImageDecodeOptions()
        preload.preloadAllFrames = true
        let tallies = try TruncationCheck.run(
            "GIF \(frames) frame(s)", coder: GIFCoder.shared, optionSets: [ImageDecodeOptions(), preload],
            randomCuts: 60
        ) { try Self.file(frames: frames, seed: $0.next()) }
        for tally in tallies {
            #expect(tally.violations.isEmpty, "\(tally)")
            #expect(tally.flagged >= 1, "the cut before the trailer decodes: it must be flagged")
        }
    }

    /// Without its trailer an animation decodes whole, marked incomplete; with `firstFrameOnly` the decode never
    /// reads past the first frame, so its image is the whole file's first frame, unmarked.
    @Test func anAnimationWithoutItsTrailer() throws {
        let data = try Self.file(frames: 3, seed: 9)
        let whole = try GIFCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(whole.frameCount == 3 && !whole.metadata.isIncomplete)
        let cut = data.dropLast(1)
        let image = try GIFCoder.shared.decode(cut, options: ImageDecodeOptions())
        #expect(image.frameCount == 3 && image.metadata.isIncomplete)
        var first = ImageDecodeOptions()
        first.firstFrameOnly = true
        let frame = try GIFCoder.shared.decode(cut, options: first)
        #expect(!frame.metadata.isIncomplete && frame.pixels == whole.pixels)
    }
}
