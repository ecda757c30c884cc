import AVIFCoder
import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Issue 32, defect 12: a decode of a cut AVIF (a still from the SDK's encoder, a 2x2 grid, a sequence) fails with
/// `badImageData` or says it is incomplete; one-shot and through the incremental decoder (``TruncationCheck``;
/// `TRUNCATION_SEED` replays a run).
@Suite struct AVIFTruncationTests {
    enum Kind: String, CaseIterable { case still, grid, sequence }

    static func file(_ kind: Kind, seed: UInt64) throws -> Data {
        guard kind != .grid else {
            var spec = AVIFTestFiles.Spec()
            (spec.width, spec.height) = (128, 128)  // grid cells are at least 64x64
            spec.grid = (columns: 2, rows: 2)
            return AVIFTestFiles.encode(spec)
        }
        let image = TruncationCheck.image(frames: kind == .sequence ? 3 : 1, width: 32, height: 24, seed: seed)
        return try AVIFCoder.shared.encode(image, as: .avif, options: ImageEncodeOptions(effort: .fast))
    }

    @Test(.enabled(if: AVIFCoder.hasEncoder), arguments: Kind.allCases)
    func cutFilesAreRejectedOrMarkedIncomplete(kind: Kind) throws {
        let tallies = try TruncationCheck.run("AVIF \(kind)", coder: AVIFCoder.shared, randomCuts: 30) {
            try Self.file(kind, seed: $0.next())
        }
        #expect(tallies.allSatisfy { $0.violations.isEmpty }, "\(tallies)")
    }
}
