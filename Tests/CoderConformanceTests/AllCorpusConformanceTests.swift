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
@Suite struct AllCorpusConformanceTests {
    @Test func everyRowOfTheCorpusIsMetThroughTheRegisteredCoders() throws {
        guard Corpus.isAvailable else {
            print("CoderConformanceTests: no corpus at $IMAGE_CORPUS or ../shared/corpus; skipped")
            return
        }
        let coders = CodersManager(coders: [PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared])
        let rows = Corpus.expectations()
        #expect(rows.count == 829, "the corpus MANIFEST lists 829 files")
        var perFolder: [String: (passed: Int, total: Int)] = [:]
        for row in rows {
            let outcome = ConformanceCheck.check(row, coder: coders, acceptStillForAnimatedPNG: true)
            perFolder[row.folder, default: (0, 0)].total += 1
            if outcome.passed { perFolder[row.folder, default: (0, 0)].passed += 1 }
            #expect(outcome.passed, "\(outcome)")
        }
        for (folder, counts) in perFolder.sorted(by: { $0.key < $1.key }) {
            print("conformance \(folder): \(counts.passed)/\(counts.total)")
        }
        let passed = perFolder.values.reduce(0) { $0 + $1.passed }
        print("conformance total: \(passed)/\(rows.count)")
    }
}
