import GIFCoder
import ImageCore
import ImageTestSupport
import Testing

/// GIF rows of the shared corpus (`gif/…`, `hostile/gif`, and the GIF files of `hostile/bombs` and
/// `hostile/truncated`) decoded with ``GIFCoder`` under the MANIFEST.md rules.
@Suite struct GIFConformanceTests {
    static let folders: [(prefix: String, extensions: Set<String>?)] = [
        ("gif", nil), ("hostile/gif", nil), ("hostile/bombs", ["gif"]), ("hostile/truncated", ["gif"]),
    ]

    @Test func corpusRowsAreMet() {
        guard Corpus.isAvailable else {
            print("GIFConformanceTests: corpus not found ($IMAGE_CORPUS or ../shared/corpus); skipping")
            return
        }
        var rowCount = 0
        for (prefix, extensions) in Self.folders {
            let rows = Corpus.expectations(under: prefix, extensions: extensions)
            var byFolder: [String: (passed: Int, total: Int)] = [:]
            for row in rows {
                let outcome = ConformanceCheck.check(row, coder: GIFCoder.shared)
                #expect(outcome.passed, "\(outcome)")
                byFolder[row.folder, default: (0, 0)].total += 1
                if outcome.passed { byFolder[row.folder, default: (0, 0)].passed += 1 }
            }
            for (folder, counts) in byFolder.sorted(by: { $0.key < $1.key }) {
                let scope = extensions.map { " (\($0.sorted().joined(separator: ",")) files)" } ?? ""
                print("GIF conformance \(folder)\(scope): \(counts.passed)/\(counts.total) passed")
            }
            rowCount += rows.count
        }
        #expect(rowCount > 0, "the corpus has no GIF rows")
    }
}
