import AVIFCoder
import Foundation
import GIFCoder
import HEIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import PNGCoder
import Testing
import WebPCoder

/// Every row of `corpus-heic` through one `CodersManager` holding every coder, as an application registers them
/// (the format is sniffed, never taken from the file name). Sizes are the stored `ispe` size, so transforms are
/// off (``ConformanceCheck/options``).
///
/// The pixel budget is raised to 200 Mpixel: the corpus holds a real 199.8-Mpixel phone photo (`200MP.heic`, an
/// `ok` row), over the SDK's default 100-Mpixel budget, and bombs from 268 Mpixel up that must still be refused by
/// the budget.
@Suite(.enabled(if: HEICCorpus.shouldRun, "no corpus-heic (set IMAGE_CORPUS_HEIC); REQUIRE_CORPUS=1 makes this fail"))
struct HEICCorpusConformanceTests {
    static let options: ImageDecodeOptions = {
        var options = ConformanceCheck.options
        options.maxPixelCount = 200_000_000
        return options
    }()

    @Test func everyRowOfTheHEICCorpusIsMetThroughTheRegisteredCoders() throws {
        try #require(HEICCorpus.isAvailable, "REQUIRE_CORPUS=1 but corpus-heic is missing")
        let coders = CodersManager(coders: [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
        ])
        let rows = HEICCorpus.expectations()
        #expect(rows.count == 75, "the corpus-heic MANIFEST lists 75 files")
        let outcomes = ConformanceCheck.checkAll(rows, corpus: "corpus-heic") { row in
            let started = ContinuousClock.now
            let outcome = ConformanceCheck.check(row, coder: coders, options: Self.options)
            print("\(outcome) [\(ContinuousClock.now - started)]")
            return outcome
        }
        for outcome in outcomes { #expect(outcome.passed, "\(outcome)") }
    }
}
