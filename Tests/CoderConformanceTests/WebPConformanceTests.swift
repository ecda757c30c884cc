import ImageCore
import ImageTestSupport
import Testing
import WebPCoder

/// WebP rows of the shared corpus (`webp/…`, `hostile/webp`, and the WebP files of `hostile/bombs` and
/// `hostile/truncated`) decoded with ``WebPCoder`` under the MANIFEST.md rules.
@Suite struct WebPConformanceTests {
    static let folders: [(prefix: String, extensions: Set<String>?)] = [
        ("webp", nil), ("hostile/webp", nil), ("hostile/bombs", ["webp"]), ("hostile/truncated", ["webp"]),
    ]

    @Test func corpusRowsAreMet() {
        guard Corpus.isAvailable else {
            print("WebPConformanceTests: corpus not found ($IMAGE_CORPUS or ../shared/corpus); skipping")
            return
        }
        var rowCount = 0
        for (prefix, extensions) in Self.folders {
            let rows = Corpus.expectations(under: prefix, extensions: extensions)
            var byFolder: [String: (passed: Int, total: Int)] = [:]
            for row in rows {
                let outcome = ConformanceCheck.check(row, coder: WebPCoder.shared)
                #expect(outcome.passed, "\(outcome)")
                byFolder[row.folder, default: (0, 0)].total += 1
                if outcome.passed { byFolder[row.folder, default: (0, 0)].passed += 1 }
            }
            for (folder, counts) in byFolder.sorted(by: { $0.key < $1.key }) {
                let scope = extensions.map { " (\($0.sorted().joined(separator: ",")) files)" } ?? ""
                print("WebP conformance \(folder)\(scope): \(counts.passed)/\(counts.total) passed")
            }
            rowCount += rows.count
        }
        #expect(rowCount > 0, "the corpus has no WebP rows")
    }
}
