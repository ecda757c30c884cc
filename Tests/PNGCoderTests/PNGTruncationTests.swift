import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Issue 32, defect 12: libpng stops reading after the last image data, so a PNG cut in the chunks after it (or
/// in IEND) decodes; the image must then say it is incomplete. Every cut of a generated still, an interlaced one
/// and an APNG, one-shot and through the incremental decoder (``TruncationCheck``; `TRUNCATION_SEED` replays a
/// run).
@Suite struct PNGTruncationTests {
    enum Kind: String, CaseIterable { case still, interlaced, animated }

    static func file(_ kind: Kind, seed: UInt64) throws -> Data {
        let image = TruncationCheck.image(frames: kind == .animated ? 3 : 1, width: 40, height: 30, seed: seed)
        return try PNGCoder.shared.encode(
            image, as: .png, options: ImageEncodeOptions(progressive: kind == .interlaced))
    }

    @Test(arguments: Kind.allCases)
    func cutFilesAreRejectedOrMarkedIncomplete(kind: Kind) throws {
        var preload = ImageDecodeOptions()
        preload.preloadAllFrames = true
        let tallies = try TruncationCheck.run(
            "PNG \(kind)", coder: PNGCoder.shared, optionSets: [ImageDecodeOptions(), preload]
        ) { try Self.file(kind, seed: $0.next()) }
        for tally in tallies {
            #expect(tally.violations.isEmpty, "\(tally)")
            #expect(tally.flagged >= 12, "every cut inside IEND decodes: it must be flagged")
        }
    }

    /// A file cut inside IEND decodes (every pixel is there) and is marked incomplete; bytes after IEND are not
    /// looked at.
    @Test func onlyAWholeEndChunkMakesItComplete() throws {
        let data = try Self.file(.still, seed: 3)
        for cut in 1...12 {
            #expect(try PNGCoder.shared.decode(data.dropLast(cut), options: ImageDecodeOptions()).metadata.isIncomplete)
        }
        var trailing = data
        trailing.append(contentsOf: [1, 2, 3])
        #expect(try !PNGCoder.shared.decode(trailing, options: ImageDecodeOptions()).metadata.isIncomplete)
    }
}
