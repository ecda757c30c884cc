import AVIFCoder
import Foundation
import GIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import JXLCoder
import PNGCoder
import Testing
import WebPCoder

/// Every row of `corpus-jxl` through one `CodersManager` holding every coder (the format is sniffed, never taken
/// from the file name). Sizes are the stored size (``ConformanceCheck/options`` keeps the orientation raw); the
/// oriented decode is checked apart.
@Suite(.enabled(if: SiblingCorpus.jxl.shouldRun, "no corpus-jxl (set IMAGE_CORPUS_JXL); REQUIRE_CORPUS=1 fails"))
struct JXLCorpusConformanceTests {
    static let coders = CodersManager(coders: [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, JXLCoder.shared,
    ])

    @Test func everyRowOfTheJXLCorpusIsMet() throws {
        let rows = try SiblingCorpus.jxl.requireExpectations()
        #expect(rows.count == 82, "the corpus-jxl MANIFEST lists 82 files")
        let outcomes = ConformanceCheck.checkAll(rows, corpus: "corpus-jxl") {
            ConformanceCheck.check($0, coder: Self.coders)
        }
        for outcome in outcomes { #expect(outcome.passed, "\(outcome)") }
    }

    /// With the orientation applied (the default), orientations 5-8 swap the stored width and height, as the
    /// rows' notes say.
    @Test func orientedDecodesHaveTheDisplayedSize() throws {
        let rows = try SiblingCorpus.jxl.requireExpectations(under: "jxl/jxl-rs").filter {
            $0.url.lastPathComponent.hasPrefix("orientation")
        }
        #expect(rows.count == 8)
        for row in rows {
            let image = try CodersManager.decode(
                Data(contentsOf: row.url), with: Self.coders, options: ImageDecodeOptions())
            let turns = ["5", "6", "7", "8"].contains { row.url.lastPathComponent.hasPrefix("orientation\($0)") }
            #expect(image.width == (turns ? row.height : row.width), "\(row)")
            #expect(image.height == (turns ? row.width : row.height), "\(row)")
            #expect(image.metadata.orientation == .up)
        }
    }
}
