import Foundation
import HEIFCoder
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32, defect 12: a decode of a cut HEIC fails with `badImageData` or says it is incomplete. Every cut of a
/// file from libheif's HEVC encoder (``TruncationCheck``; `TRUNCATION_SEED` replays a run).
@Suite struct HEIFTruncationTests {
    @Test(.enabled(if: HEIFCoder.canEncodeHEIC), arguments: [false, true])
    func cutFilesAreRejectedOrMarkedIncomplete(alpha: Bool) throws {
        let tallies = try TruncationCheck.run("HEIC alpha \(alpha)", coder: HEIFCoder.shared, randomCuts: 30) { rng in
            let picture = TruncationCheck.picture(
                width: 64, height: 48, layout: alpha ? .rgba8 : .rgb8, seed: rng.next())
            return try HEIFCoder.shared.encode(Image(pixels: picture), as: .heic, options: ImageEncodeOptions())
        }
        #expect(tallies.allSatisfy { $0.violations.isEmpty }, "\(tallies)")
    }
}
