import Foundation
import ImageCore
import ImageTestSupport
import JPEGCoder
import Testing

/// Every JPEG row of the shared corpus (DESIGN.md §8) checked against JPEGCoder.
@Suite struct JPEGConformanceTests {
    /// Folders (or folder + extension filters) that hold JPEG files.
    static let groups: [String] = ["jpeg", "hostile/jpeg", "hostile/bombs", "hostile/truncated", "photos"]
    static let extensions: Set<String> = ["jpg", "jpeg"]

    @Test(arguments: groups)
    func corpusGroup(_ group: String) {
        guard Corpus.isAvailable else {
            print(
                "JPEGConformanceTests: corpus not found (set IMAGE_CORPUS or place it at ../shared/corpus); skipping \(group)"
            )
            return
        }
        let rows = Corpus.expectations(under: group, extensions: Self.extensions)
        #expect(!rows.isEmpty, "no JPEG rows under \(group)")
        var counts: [String: (passed: Int, total: Int)] = [:]
        for row in rows {
            let outcome = ConformanceCheck.check(row, coder: JPEGCoder.shared)
            #expect(outcome.passed, "\(outcome)")
            var count = counts[row.folder, default: (0, 0)]
            count.total += 1
            if outcome.passed { count.passed += 1 }
            counts[row.folder] = count
        }
        for (folder, count) in counts.sorted(by: { $0.key < $1.key }) {
            print("JPEG conformance \(folder): \(count.passed)/\(count.total) rows met")
        }
    }
}
