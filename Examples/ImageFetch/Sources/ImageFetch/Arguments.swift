import ArgumentParser
import WebImage

/// `--format`: the formats the SDK's coders encode.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument {
    case jpeg, png, webp, gif, avif

    var imageFormat: ImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .gif: .gif
        case .avif: .avif
        }
    }
}

/// `--progress`: when to draw the progress bar.
enum ProgressMode: String, CaseIterable, ExpressibleByArgument {
    /// When stderr is a terminal and there is more than one URL.
    case auto
    case always
    case never
}

/// `--max-size 256x256` (or `256` for a square).
extension PixelSize: @retroactive ExpressibleByArgument {
    public init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let width = Int(parts[0]), let height = Int(parts.last!),
            width > 0, height > 0
        else { return nil }
        self.init(width: width, height: height)
    }
}
