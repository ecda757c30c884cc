/// The controls a caller can use on loads already running or on the parts that serve them, each declared like an
/// option: what it changes. None may change what another load gets, only when it gets it or whether it still wants
/// it; the main-line model test draws every one.
public enum LoadControl: String, CaseIterable, Sendable, CustomStringConvertible {
    /// ``ImageLoadOperation/cancel()``: this load ends with `cancelled`; a download shared with others goes on.
    case cancelLoad
    /// ``ImageManager/cancelAll()``: every load of the manager ends with `cancelled`.
    case cancelAllLoads
    /// A loader's `cancelAllDownloads()` (``DownloadControl/cancelAll()``): every download in flight or waiting for
    /// admission ends, its loads with `cancelled`; a load started after the call returns gets a new download.
    case cancelAllDownloads
    /// A loader's `cancelDownloads(for:)` (``DownloadControl/cancel(url:)``): the same for the URL the caller gave.
    case cancelDownloadsForURL
    /// ``ImageLoadOperation/priority``: where the load waits (admission, the loader's queue) it moves.
    case priority
    /// A memory level's cost and count limits changed at run time: it evicts, it never serves another key's image.
    case memoryLimits
    /// A disk level's size and age limits changed at run time.
    case diskLimits
    /// ``ImageManager/maxDownloadsAheadOfDecoding`` changed at run time.
    case downloadsAheadOfDecoding
    /// ``ImageManager/removeFailedURL(_:)`` / ``ImageManager/removeAllFailedURLs()``.
    case removeFailedURLs
    /// ``CachesManager/promotesHits`` changed at run time: a lower level's hit is copied to the levels above it,
    /// which changes where a later query stops, never what a load gets.
    case cacheHitPromotion

    /// What the control changes.
    public var traits: OptionTraits {
        switch self {
        case .cancelLoad, .cancelAllLoads, .cancelAllDownloads, .cancelDownloadsForURL, .priority: .scheduling
        case .memoryLimits, .diskLimits, .cacheHitPromotion: OptionTraits(.stored)
        case .downloadsAheadOfDecoding: .scheduling
        case .removeFailedURLs: OptionTraits(.sources)
        }
    }

    /// The control's name.
    public var description: String { rawValue }
}

/// Every public option, context key, decode option, encode option and control with its declaration: the table a
/// reader learns what an option does from (ARCHITECTURE.md and the `CacheKeys` article print it), and the list the
/// main-line model test draws from, so a new option enters the model by construction.
public enum OptionCatalog {
    /// Where an option is set.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// An ``ImageOptions`` flag.
        case flag
        /// An ``ImageContextOption`` (built-in, or a plugin key declared with ``ImageContextOption/init(_:traits:)``).
        case contextKey
        /// A stored option of ``ImageDecodeOptions``.
        case decodeOption
        /// A stored option of ``ImageEncodeOptions``.
        case encodeOption
        /// A ``LoadControl``.
        case control
    }

    /// One declaration.
    public struct Entry: Hashable, Sendable, CustomStringConvertible {
        /// Where it is set.
        public let kind: Kind
        /// Its name (the member's or key's name).
        public let name: String
        /// What it changes.
        public let traits: OptionTraits

        /// "kind name: traits".
        public var description: String { "\(kind.rawValue) \(name): \(traits)" }
    }

    /// Every declaration, in a fixed order: flags, built-in context keys, declared plugin keys, decode options,
    /// encode options, controls. Plugin keys appear once their declaring `static let` ran.
    public static var all: [Entry] {
        ImageOptions.Flag.allCases.map { Entry(kind: .flag, name: $0.description, traits: $0.traits) }
            + ContextSlot.allCases.map { Entry(kind: .contextKey, name: $0.name, traits: $0.traits) }
            + PluginKeyTraits.declared.map { Entry(kind: .contextKey, name: $0.0, traits: $0.1) }
            + ImageDecodeOptions.Field.allCases.map { Entry(kind: .decodeOption, name: $0.rawValue, traits: $0.traits) }
            + ImageEncodeOptions.Field.allCases.map { Entry(kind: .encodeOption, name: $0.rawValue, traits: $0.traits) }
            + LoadControl.allCases.map { Entry(kind: .control, name: $0.rawValue, traits: $0.traits) }
    }

    /// The catalog as a Markdown table (name, where, effects, key, download).
    public static var markdownTable: String {
        var lines = ["| option | kind | changes |", "|---|---|---|"]
        for entry in all { lines.append("| `\(entry.name)` | \(entry.kind.rawValue) | \(entry.traits) |") }
        return lines.joined(separator: "\n")
    }
}
