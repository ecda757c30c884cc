import AVIFCoder
import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// Every row of `corpus-avif` through `AVIFCoder` alone, per folder, with the corpus's AVIF convention: sizes
/// are the stored `ispe` size, so transforms are off (``ConformanceCheck/options``: raw orientation, every frame).
@Suite(.enabled(if: AVIFCorpus.shouldRun, "no corpus-avif (set IMAGE_CORPUS_AVIF); REQUIRE_CORPUS=1 makes this fail"))
struct AVIFCorpusTests {
    @Test(arguments: ["avif/av1-avif", "avif/libavif-test-data", "avif/link-u", "avif/mp4parse-rust", "hostile/avif"])
    func everyRowOfTheFolderIsMet(folder: String) throws {
        try #require(AVIFCorpus.isAvailable, "REQUIRE_CORPUS=1 but corpus-avif is missing")
        let rows = AVIFCorpus.expectations(under: folder)
        #expect(!rows.isEmpty)
        var passed = 0
        for row in rows {
            let outcome = ConformanceCheck.check(row, coder: AVIFCoder.shared)
            if outcome.passed { passed += 1 }
            #expect(outcome.passed, "\(outcome)")
        }
        print("AVIF conformance \(folder): \(passed)/\(rows.count)")
    }
}
