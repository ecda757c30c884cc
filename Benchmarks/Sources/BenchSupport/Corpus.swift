import Foundation

/// Where the benchmark inputs come from: the shared photo corpus beside the repository.
///
/// `IMAGE_CORPUS` wins; otherwise `../shared/corpus` next to the repository root (found from this file's path, so
/// it works whatever the working directory of the benchmark process is).
public enum Corpus {
    /// The corpus root.
    public static var root: URL {
        if let path = ProcessInfo.processInfo.environment["IMAGE_CORPUS"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        // .../main/Benchmarks/Sources/BenchSupport/Corpus.swift -> .../main -> .../shared/corpus
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return repository.deletingLastPathComponent().appendingPathComponent("shared/corpus", isDirectory: true)
    }

    /// The 12 MP camera photo (Canon EOS 450D, 4272x2848, baseline 4:2:0).
    public static let photo12MPName = "Canon_EOS_450D.jpg"

    /// Reads a file of the photos folder; stops the process with a clear message when it is missing.
    public static func photo(_ name: String) -> Data {
        let url = root.appendingPathComponent("photos").appendingPathComponent(name)
        guard let data = try? Data(contentsOf: url) else {
            FileHandle.standardError.write(Data("benchmark input missing: \(url.path) (set IMAGE_CORPUS)\n".utf8))
            exit(2)
        }
        return data
    }
}
