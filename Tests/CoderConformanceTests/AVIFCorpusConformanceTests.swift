import AVIFCoder
import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Every row of `corpus-avif` through one `CodersManager` holding all five coders, as an application registers
/// them (the format is sniffed, never taken from the file name). Sizes are the stored `ispe` size, so transforms
/// are off (``ConformanceCheck/options``).
@Suite(.enabled(if: AVIFCorpus.shouldRun, "no corpus-avif (set IMAGE_CORPUS_AVIF); REQUIRE_CORPUS=1 makes this fail"))
struct AVIFCorpusConformanceTests {
    @Test func everyRowOfTheAVIFCorpusIsMetThroughTheRegisteredCoders() throws {
        try #require(AVIFCorpus.isAvailable, "REQUIRE_CORPUS=1 but corpus-avif is missing")
        let coders = CodersManager(coders: [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared,
        ])
        let rows = AVIFCorpus.expectations()
        #expect(rows.count == 116, "the corpus-avif MANIFEST lists 116 files")
        let outcomes = ConformanceCheck.checkAll(rows, corpus: "corpus-avif") {
            ConformanceCheck.check($0, coder: coders)
        }
        for outcome in outcomes { #expect(outcome.passed, "\(outcome)") }
    }
}
