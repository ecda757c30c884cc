import Synchronization

extension ContextSlot {
    /// What each built-in context key changes: an exhaustive switch, so a new key without a declaration does not
    /// compile. ``imageDecodeOptions`` and ``imageEncodeOptions`` hold several options each, declared field by field
    /// (``ImageDecodeOptions/Field``, ``ImageEncodeOptions/Field``); their entries here are the union.
    var traits: OptionTraits {
        switch self {
        case .imageCache: OptionTraits([.stored, .sources], download: .isolates)
        case .imageLoader: OptionTraits(.bytesFetched, download: .isolates)
        // A coder of the load's own may decode the same bytes otherwise: its type is a key part.
        case .imageCoder: OptionTraits(.pixels, key: .part("coder"))
        case .imageTransformer: OptionTraits(.transform, key: .part("transform"))
        case .cacheKeyFilter: OptionTraits(.stored, key: .base)
        case .cacheSerializer: OptionTraits(.stored)
        case .callbackQueue: .scheduling
        case .imageScaleFactor: .scheduling
        case .imagePreserveAspectRatio: OptionTraits(.pixels, key: .part("thumbnail"), appliesToDecodedImage: true)
        case .imageThumbnailPixelSize: OptionTraits(.pixels, key: .part("thumbnail"), appliesToDecodedImage: true)
        case .imageScaleDownLimitBytes:
            OptionTraits(.pixels, key: .bypass, appliesToDecodedImage: true, actsOnlyWith: .scaleDownLargeImages)
        case .imageDecodeOptions: OptionTraits([.pixels, .budget], key: .part("decode"))
        case .imageEncodeOptions: OptionTraits(.stored, key: .part("encode"))
        case .queryCacheType, .originalQueryCacheType: OptionTraits(.sources)
        case .storeCacheType, .originalStoreCacheType: OptionTraits(.stored)
        case .originalImageCache: OptionTraits([.stored, .sources], download: .isolates)
        case .downloadRequestModifier, .downloadResponseModifier, .downloadDecryptor:
            OptionTraits(.bytesFetched, download: .isolates)
        case .loaderCachedImage, .loaderCachedMetadata:
            OptionTraits(.bytesFetched, download: .field("etag,lastModified"))
        case .setImageOperationKey: .scheduling
        case .downloadHeaderCheck: OptionTraits(.budget)
        case .cachePartitionKey:
            OptionTraits([.stored, .bytesFetched], key: .part("partition"), download: .field("partition"))
        // When this load ends (`timedOut`), never what it or another load gets from the bytes: the load leaves
        // shared work as a cancel, and a `timedOut` never blocks its URL, so the verdicts of a failure stand.
        case .loadTimeout: .scheduling
        }
    }
}

extension ImageContextOption {
    /// Creates a plugin's key and declares what it changes, once (a `static let` runs this once per process).
    ///
    /// The manager derives its rules from the declaration like any built-in key's: a ``OptionEffect/bytesFetched``
    /// key read by a loader must be part of the loader's ``ImageLoader/transferKey(for:options:context:)`` (declare
    /// `download: .field(…)`) or isolate the download; a key that changes pixels belongs in a ``CoderOptionKey``
    /// instead (it then enters the cache key). A key made with ``init(_:)`` and never declared counts as changing
    /// the bytes fetched and gets a download of its own, the safe assumption.
    public init(_ rawValue: String, traits: OptionTraits) {
        self.init(rawValue: rawValue)
        if slot == nil { PluginKeyTraits.declare(self, traits) }
    }

    /// What this key changes: the declaration of a built-in key, a plugin key's declaration, or — for a plugin key
    /// never declared — an own download.
    public var traits: OptionTraits {
        if let slot { return slot.traits }
        return PluginKeyTraits.traits(of: self) ?? PluginKeyTraits.undeclared
    }

    /// True when this plugin key's traits were declared with ``init(_:traits:)`` (built-in keys always are).
    public var isDeclared: Bool { slot != nil || PluginKeyTraits.traits(of: self) != nil }
}

/// The declarations of plugin context keys, by name.
enum PluginKeyTraits {
    /// What an undeclared plugin key is taken to change.
    static let undeclared = OptionTraits(.bytesFetched, download: .isolates)

    private static let table = Mutex<[String: OptionTraits]>([:])

    static func declare(_ key: ImageContextOption, _ traits: OptionTraits) {
        table.withLock { $0[key.rawValue] = traits }
    }

    static func traits(of key: ImageContextOption) -> OptionTraits? { table.withLock { $0[key.rawValue] } }

    /// Every declared plugin key, by name.
    static var declared: [(String, OptionTraits)] { table.withLock { $0.sorted { $0.key < $1.key } } }
}
