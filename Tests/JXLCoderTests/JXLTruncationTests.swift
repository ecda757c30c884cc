import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Issue 32, defect 12: a decode of a cut JPEG XL file (lossless, lossy progressive, animated) fails with
/// `badImageData` or says it is incomplete; one-shot and through the incremental decoder (``TruncationCheck``;
/// `TRUNCATION_SEED` replays a run). An animation cut inside its last frame lists every frame and shows the
/// first: only decoding the last frame tells, and the image is then marked.
@Suite struct JXLTruncationTests {
    enum Kind: String, CaseIterable { case lossless, lossyProgressive, animated }

    @Test(arguments: Kind.allCases)
    func cutFilesAreRejectedOrMarkedIncomplete(kind: Kind) throws {
        let tallies = try TruncationCheck.run("JPEG XL \(kind)", coder: JXLCoder.shared) { rng in
            let image = TruncationCheck.image(
                frames: kind == .animated ? 3 : 1, width: 40, height: 30, seed: rng.next())
            return try JXLCoder.shared.encode(
                image, as: .jxl,
                options: ImageEncodeOptions(lossless: kind != .lossyProgressive, progressive: kind == .lossyProgressive)
            )
        }
        #expect(tallies.allSatisfy { $0.violations.isEmpty }, "\(tallies)")
        if kind == .animated { #expect(tallies.allSatisfy { $0.flagged > 0 }, "cuts in the last frame decode") }
    }
}
