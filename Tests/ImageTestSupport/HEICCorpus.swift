import Foundation

/// Reads the shared HEIC conformance corpus (`corpus-heic`, kept beside `corpus` until HEIC joins it).
///
/// Located by `$IMAGE_CORPUS_HEIC`, else `corpus-heic` beside `$IMAGE_CORPUS`, else `../shared/corpus-heic`
/// beside the package root. Same `expectations.tsv` format and rules as ``Corpus``. Tests that need it are
/// skipped when it is absent, and fail when `REQUIRE_CORPUS=1` says it must be there.
public enum HEICCorpus {
    /// The corpus root, or nil when absent.
    public static let root: URL? = {
        let fm = FileManager.default
        let environment = ProcessInfo.processInfo.environment
        var candidates: [URL] = []
        if let path = environment["IMAGE_CORPUS_HEIC"], !path.isEmpty {
            candidates.append(URL(fileURLWithPath: path, isDirectory: true))
        } else {
            if let path = environment["IMAGE_CORPUS"], !path.isEmpty {
                candidates.append(
                    URL(fileURLWithPath: path, isDirectory: true).deletingLastPathComponent()
                        .appendingPathComponent("corpus-heic"))
            }
            // #filePath is Tests/ImageTestSupport/HEICCorpus.swift; the package root is three levels up.
            let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            candidates.append(packageRoot.appendingPathComponent("../shared/corpus-heic"))
        }
        return candidates.map(\.standardizedFileURL).first {
            fm.fileExists(atPath: $0.appendingPathComponent("MANIFEST.md").path)
        }
    }()

    /// True when the corpus is present.
    public static var isAvailable: Bool { root != nil }

    /// True when `REQUIRE_CORPUS=1`: a missing corpus is then a failure, not a skip.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["REQUIRE_CORPUS"] == "1" }

    /// Run corpus tests when the corpus is there, or when it is required (they then fail on its absence).
    public static var shouldRun: Bool { isAvailable || isRequired }

    /// The rows of every folder under `prefix` (e.g. `"heic"`, `"hostile/heic"`), sorted by folder.
    public static func expectations(under prefix: String = "") -> [CorpusExpectation] {
        guard let root else { return [] }
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
            guard let text = try? String(contentsOf: tsv, encoding: .utf8) else { continue }
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
        return rows
    }
}
