import Foundation
import ImageCore
import ImageTestSupport
import Testing
import WebPCoder

/// Issue 32, defect 12: a decode of a cut WebP (lossy, lossless with alpha, animated) fails with `badImageData` or
/// says it is incomplete; one-shot and through the incremental decoder (``TruncationCheck``; `TRUNCATION_SEED`
/// replays a run).
@Suite struct WebPTruncationTests {
    enum Kind: String, CaseIterable { case lossy, losslessAlpha, animated }

    @Test(arguments: Kind.allCases)
    func cutFilesAreRejectedOrMarkedIncomplete(kind: Kind) throws {
        let tallies = try TruncationCheck.run("WebP \(kind)", coder: WebPCoder.shared) { rng in
            let image = TruncationCheck.image(
                frames: kind == .animated ? 3 : 1, width: 48, height: 36, layout: kind == .lossy ? .rgb8 : .rgba8,
                seed: rng.next())
            return try WebPCoder.shared.encode(
                image, as: .webp, options: ImageEncodeOptions(lossless: kind == .losslessAlpha))
        }
        #expect(tallies.allSatisfy { $0.violations.isEmpty }, "\(tallies)")
    }
}
