import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Every row of every folder of the shared corpus through one `CodersManager` holding the four coders, as an
/// application registers them: the format is sniffed, never taken from the file name.
///
/// Skipped when the corpus is absent; fails when `REQUIRE_CORPUS=1` and it is absent. APNG rows (a `.png` whose
/// row expects several frames) must decode as animations with every frame: the MANIFEST's allowance for a non-APNG
/// decoder (the default image as a still) is not used since PNGCoder reads APNG.
@Suite(.enabled(if: Corpus.shouldRun, "needs the conformance corpus ($IMAGE_CORPUS or ../shared/corpus)"))
struct AllCorpusConformanceTests {
    @Test func everyRowOfTheCorpusIsMetThroughTheRegisteredCoders() throws {
        let rows = try Corpus.requireExpectations()
        let coders = CodersManager(coders: [PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared])
        #expect(rows.count == 829, "the corpus MANIFEST lists 829 files")
        let outcomes = ConformanceCheck.checkAll(rows, corpus: "corpus") { ConformanceCheck.check($0, coder: coders) }
        for outcome in outcomes { #expect(outcome.passed, "\(outcome)") }
        #expect(outcomes.filter(\.decodedAPNGAsStill).isEmpty, "no APNG row may pass as a still")
        #expect(rows.filter(\.isAnimatedPNG).count == 3, "the corpus holds 3 APNG rows, now decoded as animations")
    }
}
