import Foundation
import WebImage

/// Fetches one URL through the manager, re-encodes it if asked, and writes it to the output folder.
///
/// Encoding runs on the SDK's CPU pool and file writes on its I/O pool, never on Swift's cooperative threads.
struct Fetcher: Sendable {
    /// What one fetch produced.
    struct Outcome: Sendable {
        let file: URL
        let bytes: Int
        /// "network", "memory" or "disk".
        let source: String
        let summary: String
    }

    let manager: ImageManager
    let outputDirectory: URL
    let maxSize: PixelSize?
    let format: ImageFormat?
    let encodeOptions: ImageEncodeOptions

    func fetch(_ url: URL, baseName: String) async throws -> Outcome {
        var context = ImageContext()
        if let maxSize { context.imageTransformer = DownscaleTransformer(maxSize: maxSize) }
        let result = try await manager.loadImage(with: url, context: context)
        let image = result.image

        let data: Data
        let written: ImageFormat
        if format == nil, maxSize == nil, let original = result.data {
            (data, written) = (original, ImageFormat.detect(original) ?? image.format)
        } else {
            // Keep the source format when a coder can write it, else fall back to PNG (lossless, has alpha).
            let target = format ?? (CodersManager.shared.canEncode(to: image.format) ? image.format : .png)
            let options = encodeOptions
            data = try await manager.workPool.run {
                try CodersManager.shared.encode(image, as: target, options: options)
            }
            written = target
        }

        let file = outputDirectory.appendingPathComponent("\(baseName).\(written.fileExtension ?? "img")")
        try await WorkPool.io.run { try data.write(to: file, options: .atomic) }
        let source = result.cacheType == .none ? "network" : result.cacheType.description
        let summary = "\(written) \(image.width)x\(image.height), \(formatBytes(data.count)), from \(source)"
        return Outcome(file: file, bytes: data.count, source: source, summary: summary)
    }

    /// File names without extension, one per URL, unique within the run: `cat`, `cat-2`, `image-3`.
    static func uniqueBaseNames(for urls: [URL]) -> [String] {
        var used: Set<String> = []
        return urls.enumerated().map { index, url in
            let stem =
                url.isFileURL || url.scheme == "http" || url.scheme == "https"
                ? url.deletingPathExtension().lastPathComponent : ""
            let cleaned = String(stem.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
            let base = cleaned.isEmpty || cleaned == "_" ? "image-\(index + 1)" : cleaned
            var name = base
            var suffix = 2
            while used.contains(name) {
                name = "\(base)-\(suffix)"
                suffix += 1
            }
            used.insert(name)
            return name
        }
    }
}
