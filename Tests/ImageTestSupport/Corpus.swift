import Foundation

/// One row of a corpus folder's `expectations.tsv` (see `../shared/corpus/MANIFEST.md`).
public struct CorpusExpectation: Sendable, CustomStringConvertible {
    /// What the SDK must do with the file.
    public enum Verdict: String, Sendable {
        /// Must decode at `width` x `height` with `frames` frames.
        case ok
        /// Must fail with a clear error.
        case reject
    }

    /// The file's URL.
    public let url: URL
    /// Folder relative to the corpus root, e.g. `png/pngsuite`.
    public let folder: String
    /// The verdict column.
    public let verdict: Verdict
    /// Expected (or declared) width.
    public let width: Int
    /// Expected (or declared) height.
    public let height: Int
    /// Expected frame count (0 for rejects).
    public let frames: Int
    /// The note column.
    public let note: String

    /// The note starts with `EITHER:`: a clean error or a decode at the stated size are both fine.
    public var isEither: Bool { note.hasPrefix("EITHER:") }
    /// The note starts with `BOMB:`: must be refused by the pixel/memory budget.
    public var isBomb: Bool { note.hasPrefix("BOMB:") }

    /// A PNG whose row expects several frames: an APNG (acTL), which a non-APNG decoder shows as a still.
    public var isAnimatedPNG: Bool { url.pathExtension.lowercased() == "png" && verdict == .ok && frames > 1 }

    /// "folder/file".
    public var description: String { "\(folder)/\(url.lastPathComponent)" }
}

/// Thrown by ``Corpus/requireRoot()`` when the corpus is absent: the test fails rather than passes silently.
public struct CorpusMissing: Error, CustomStringConvertible {
    /// What was missing.
    public var detail = "the conformance corpus is missing ($IMAGE_CORPUS or ../shared/corpus)"
    /// The detail.
    public var description: String { detail }
}

/// Reads the shared conformance corpus from `$IMAGE_CORPUS` or `../shared/corpus` beside the package root.
///
/// The corpus is not part of the repository (its files are third-party); tests that use it skip with a message
/// when it is absent, and `.ci/run` fails when it is missing there.
public enum Corpus {
    /// The corpus root, or nil when absent.
    public static let root: URL? = {
        let fm = FileManager.default
        if let env = ProcessInfo.processInfo.environment["IMAGE_CORPUS"], !env.isEmpty {
            let url = URL(fileURLWithPath: env, isDirectory: true)
            return fm.fileExists(atPath: url.appendingPathComponent("MANIFEST.md").path) ? url.standardizedFileURL : nil
        }
        // #filePath is Tests/ImageTestSupport/Corpus.swift; the package root is two levels up.
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let candidate = packageRoot.appendingPathComponent("../shared/corpus").standardizedFileURL
        return fm.fileExists(atPath: candidate.appendingPathComponent("MANIFEST.md").path) ? candidate : nil
    }()

    /// True when the corpus is present.
    public static var isAvailable: Bool { root != nil }

    /// True when the environment demands the corpus (`REQUIRE_CORPUS=1`, set by `.ci/run`).
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["REQUIRE_CORPUS"] == "1" }

    /// The condition for `@Test(.enabled(if: Corpus.shouldRun))`: run when the corpus is present, and also when it
    /// is required but missing, so that ``requireRoot()`` fails the test instead of it being skipped.
    public static var shouldRun: Bool { isAvailable || isRequired }

    /// The corpus root; throws (failing the test) when it is absent. Call it first in every corpus test.
    public static func requireRoot() throws -> URL {
        guard let root else { throw CorpusMissing() }
        return root
    }

    /// The rows under `prefix` (see ``expectations(under:extensions:)``); throws when the corpus is absent or
    /// the selection is empty, so a corpus test can never pass without having checked anything.
    public static func requireExpectations(
        under prefix: String = "", extensions: Set<String>? = nil
    ) throws -> [CorpusExpectation] {
        _ = try requireRoot()
        let rows = expectations(under: prefix, extensions: extensions)
        guard !rows.isEmpty else { throw CorpusMissing(detail: "no rows under '\(prefix)'") }
        return rows
    }

    /// Folders (relative paths) that hold an `expectations.tsv`, sorted.
    public static func folders() -> [String] {
        guard let root else { return [] }
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        var folders: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            if url.lastPathComponent == "expectations.tsv" {
                let folder = url.deletingLastPathComponent().standardizedFileURL.path
                    .replacingOccurrences(of: root.standardizedFileURL.path + "/", with: "")
                folders.append(folder)
            }
        }
        return folders.sorted()
    }

    /// The rows of every folder whose path starts with `prefix` (e.g. `"png"`, `"hostile/jpeg"`), or of the files
    /// whose extension is in `extensions` when given.
    public static func expectations(under prefix: String = "", extensions: Set<String>? = nil) -> [CorpusExpectation] {
        guard let root else { return [] }
        var rows: [CorpusExpectation] = []
        for folder in folders() where prefix.isEmpty || folder == prefix || folder.hasPrefix(prefix + "/") {
            let tsv = root.appendingPathComponent(folder).appendingPathComponent("expectations.tsv")
            guard let text = try? String(contentsOf: tsv, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard cols.count >= 5, let verdict = CorpusExpectation.Verdict(rawValue: cols[1]) else { continue }
                let url = root.appendingPathComponent(folder).appendingPathComponent(cols[0])
                if let extensions, !extensions.contains(url.pathExtension.lowercased()) { continue }
                rows.append(
                    CorpusExpectation(
                        url: url, folder: folder, verdict: verdict, width: Int(cols[2]) ?? 0,
                        height: Int(cols[3]) ?? 0, frames: Int(cols[4]) ?? 0,
                        note: cols.count > 5 ? cols[5] : ""))
            }
        }
        return rows
    }
}
