import Foundation

/// A conformance corpus kept beside the shared `corpus` (`corpus-apng`, `corpus-jxl`, …) until its format joins
/// the main one: same `expectations.tsv` format and rules as ``Corpus``.
///
/// Located by its own environment variable (e.g. `$IMAGE_CORPUS_APNG`), else the folder of that name beside
/// `$IMAGE_CORPUS`, else `../shared/<name>` beside the package root. Tests that need it are skipped with a message
/// when it is absent, and fail when `REQUIRE_CORPUS=1` says it must be there.
public struct SiblingCorpus: Sendable {
    /// The APNG corpus (`corpus-apng`, `$IMAGE_CORPUS_APNG`).
    public static let apng = SiblingCorpus(name: "corpus-apng", variable: "IMAGE_CORPUS_APNG")
    /// The JPEG XL corpus (`corpus-jxl`, `$IMAGE_CORPUS_JXL`).
    public static let jxl = SiblingCorpus(name: "corpus-jxl", variable: "IMAGE_CORPUS_JXL")

    /// The folder name beside `corpus`.
    public let name: String
    /// The corpus root, or nil when absent.
    public let root: URL?

    /// Locates the corpus `name`, overridden by the environment variable `variable`.
    public init(name: String, variable: String) {
        self.name = name
        let environment = ProcessInfo.processInfo.environment
        var candidates: [URL] = []
        if let path = environment[variable], !path.isEmpty {
            candidates.append(URL(fileURLWithPath: path, isDirectory: true))
        } else {
            if let path = environment["IMAGE_CORPUS"], !path.isEmpty {
                candidates.append(
                    URL(fileURLWithPath: path, isDirectory: true).deletingLastPathComponent()
                        .appendingPathComponent(name))
            }
            // #filePath is Tests/ImageTestSupport/SiblingCorpus.swift; the package root is three levels up.
            let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            candidates.append(packageRoot.appendingPathComponent("../shared/\(name)"))
        }
        root = candidates.map(\.standardizedFileURL).first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("MANIFEST.md").path)
        }
    }

    /// True when the corpus is present.
    public var isAvailable: Bool { root != nil }

    /// Run corpus tests when the corpus is there, or when it is required (`REQUIRE_CORPUS=1`): they then fail.
    public var shouldRun: Bool { isAvailable || Corpus.isRequired }

    /// The corpus root; throws (failing the test) when it is absent.
    public func requireRoot() throws -> URL {
        guard let root else { throw CorpusMissing(detail: "\(name) is missing (REQUIRE_CORPUS=1 needs it)") }
        return root
    }

    /// The rows of every folder under `prefix` (e.g. `"apng"`, `"hostile/apng"`), sorted by folder; throws when
    /// the corpus is absent or nothing matches, so a test can never pass without checking anything.
    public func requireExpectations(under prefix: String = "") throws -> [CorpusExpectation] {
        let root = try requireRoot()
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        var folders: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            guard url.lastPathComponent == "expectations.tsv" else { continue }
            let folder = url.deletingLastPathComponent().standardizedFileURL.path
                .replacingOccurrences(of: root.standardizedFileURL.path + "/", with: "")
            if prefix.isEmpty || folder == prefix || folder.hasPrefix(prefix + "/") { folders.append(folder) }
        }
        var rows: [CorpusExpectation] = []
        for folder in folders.sorted() {
            let tsv = root.appendingPathComponent(folder).appendingPathComponent("expectations.tsv")
            let text = try String(contentsOf: tsv, encoding: .utf8)
            for line in text.split(separator: "\n").dropFirst() {
                let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard cols.count >= 5, let verdict = CorpusExpectation.Verdict(rawValue: cols[1]) else { continue }
                rows.append(
                    CorpusExpectation(
                        url: root.appendingPathComponent(folder).appendingPathComponent(cols[0]), folder: folder,
                        verdict: verdict, width: Int(cols[2]) ?? 0, height: Int(cols[3]) ?? 0,
                        frames: Int(cols[4]) ?? 0, note: cols.count > 5 ? cols[5] : ""))
            }
        }
        guard !rows.isEmpty else { throw CorpusMissing(detail: "no rows under '\(prefix)' in \(name)") }
        return rows
    }
}
