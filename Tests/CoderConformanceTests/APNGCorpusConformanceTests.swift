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

/// Every row of `corpus-apng` through one `CodersManager` holding every coder, as an application registers them:
/// each `ok` row decodes to its canvas size with `acTL`'s frame count (every frame decoded), each `reject` row
/// fails with an ``ImageError`` (`imageTooLarge` for the bombs), `EITHER:` rows do one or the other.
@Suite(.enabled(if: SiblingCorpus.apng.shouldRun, "no corpus-apng (set IMAGE_CORPUS_APNG); REQUIRE_CORPUS=1 fails"))
struct APNGCorpusConformanceTests {
    static let coders = CodersManager(coders: [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, JXLCoder.shared,
    ])

    @Test func everyRowOfTheAPNGCorpusIsMet() throws {
        let rows = try SiblingCorpus.apng.requireExpectations()
        #expect(rows.count == 70, "the corpus-apng MANIFEST lists 70 files")
        let outcomes = ConformanceCheck.checkAll(rows, corpus: "corpus-apng") {
            ConformanceCheck.check($0, coder: Self.coders)
        }
        for outcome in outcomes { #expect(outcome.passed, "\(outcome)") }
    }

    /// The same rows with the default options (first frame plus an on-demand provider), every frame pulled through
    /// the provider: the sizes and counts must be the same, and every damaged file still fails (when its frames
    /// are read at the latest).
    @Test func everyOKRowDecodesOnDemandToTheSameFrames() throws {
        let rows = try SiblingCorpus.apng.requireExpectations().filter { $0.verdict == .ok && !$0.isEither }
        for row in rows {
            let data = try Data(contentsOf: row.url)
            let image = try CodersManager.decode(data, with: Self.coders, options: ImageDecodeOptions())
            #expect(image.width == row.width && image.height == row.height, "\(row)")
            #expect(image.frameCount == row.frames, "\(row)")
            let preloaded = try CodersManager.decode(
                data, with: Self.coders, options: ImageDecodeOptions(preloadAllFrames: true))
            for index in 0..<image.frameCount {
                #expect(try image.frame(at: index) == preloaded.frames[index], "\(row) frame \(index)")
            }
        }
    }
}
