import Foundation

/// The storage of an ``ImageContext``: a stored optional per built-in key, bitmasks saying which built-in keys
/// hold an entry, an explicit none, or a value of another type, and a dictionary for plugin keys.
///
/// The keys every load reads are fields of this object; the others, and the plugin keys, live in ``cold``,
/// created on the first write of one: a context that sets a transformer and a size costs one object, and
/// releasing it doesn't walk fields it never used.
///
/// A built-in key set through the raw subscript with a value of the wrong type keeps that value in `others`
/// (flagged in `foreign`), so the raw subscript still returns it while the typed accessor returns nil.
///
/// Copy-on-write: ``ImageContext`` writes to a storage only while it holds the only reference to it
/// (`isKnownUniquelyReferenced`), and a storage's ``cold`` part is never shared (``copy()`` copies it), so
/// neither is written after it became visible to another context or thread. That confinement, not a lock, is why
/// both classes may be `@unchecked Sendable`.
final class ContextStorage: @unchecked Sendable {
    var imageCache: (any ImageCacheProtocol)?
    var imageLoader: (any ImageLoader)?
    var imageTransformer: (any Transformer)?
    /// `imageTransformer?.transformerKey` and its key part, made once when the transformer was stored.
    var imageTransformerKey: TransformerKeyPart? {
        didSet { unretainedTransformerKey = imageTransformerKey.map { Unmanaged.passUnretained($0) } }
    }
    /// `imageTransformerKey`, unretained (that field holds it): a load reads the part without a retain and a
    /// release on an object every load of the context shares (see ``ImageContext/withImageTransformerKeyPart(_:)``).
    private(set) var unretainedTransformerKey: Unmanaged<TransformerKeyPart>?
    var cacheKeyFilter: (any CacheKeyFilter)?
    var callbackQueue: CallbackQueue?
    var imageScaleFactor: Double?
    var imagePreserveAspectRatio: Bool?
    var imageThumbnailPixelSize: PixelSize?
    var imageScaleDownLimitBytes: Int?
    var imageDecodeOptions: ImageDecodeOptions?
    var queryCacheType: ImageCacheType?
    var downloadRequestModifier: (any RequestModifier)?
    var cachePartitionKey: String?
    /// The keys loads rarely set, and the plugin keys; nil until one is written.
    var cold: ColdContextFields?

    /// Built-in keys with an entry: a value (typed or foreign) or an explicit none.
    var present: UInt32 = 0
    /// Built-in keys whose typed field holds a value (lets the hot path test for one without copying it out).
    var values: UInt32 = 0
    /// Built-in keys holding an explicit none.
    var explicitNone: UInt32 = 0
    /// Built-in keys holding a value of another type than their accessor's, kept in `others`.
    var foreign: UInt32 = 0

    /// The storage of every empty context (never written: it is always shared).
    static let empty = ContextStorage()

    init() {}

    /// The cold part, created when needed (for writes).
    var coldFields: ColdContextFields {
        if let cold { return cold }
        let created = ColdContextFields()
        cold = created
        return created
    }

    /// Plugin keys' values, and the foreign values of built-in keys.
    var others: [ImageContextOption: any Sendable] { cold?.others ?? [:] }
    /// Plugin keys holding an explicit none.
    var pluginNones: Set<ImageContextOption> { cold?.pluginNones ?? [] }

    /// An unshared copy.
    func copy() -> ContextStorage {
        let copy = ContextStorage()
        copy.imageCache = imageCache
        copy.imageLoader = imageLoader
        copy.imageTransformer = imageTransformer
        copy.imageTransformerKey = imageTransformerKey
        copy.cacheKeyFilter = cacheKeyFilter
        copy.callbackQueue = callbackQueue
        copy.imageScaleFactor = imageScaleFactor
        copy.imagePreserveAspectRatio = imagePreserveAspectRatio
        copy.imageThumbnailPixelSize = imageThumbnailPixelSize
        copy.imageScaleDownLimitBytes = imageScaleDownLimitBytes
        copy.imageDecodeOptions = imageDecodeOptions
        copy.queryCacheType = queryCacheType
        copy.downloadRequestModifier = downloadRequestModifier
        copy.cachePartitionKey = cachePartitionKey
        copy.cold = cold?.copy()
        copy.present = present
        copy.values = values
        copy.explicitNone = explicitNone
        copy.foreign = foreign
        return copy
    }

    /// What a key holds after a write.
    enum Entry {
        /// A value in the typed field.
        case value
        /// Nothing (the field was cleared).
        case removed
        /// An explicit none (the field was cleared).
        case explicitNone
        /// A value of another type, which the caller puts in `others` (the field was cleared).
        case foreign
    }

    /// Records what `slot` holds after its field was written: updates the masks and drops a foreign value the
    /// key held before (unless it holds a new one).
    func didWrite(_ slot: ContextSlot, _ entry: Entry) {
        let bit = slot.bit
        if foreign & bit != 0, entry != .foreign { cold?.others.removeValue(forKey: slot.option) }
        present = entry == .removed ? present & ~bit : present | bit
        values = entry == .value ? values | bit : values & ~bit
        explicitNone = entry == .explicitNone ? explicitNone | bit : explicitNone & ~bit
        foreign = entry == .foreign ? foreign | bit : foreign & ~bit
    }

    /// The field of `slot` as an `any Sendable` (nil when empty).
    func boxedValue(_ slot: ContextSlot) -> (any Sendable)? {
        switch slot {
        case .imageCache: imageCache
        case .imageLoader: imageLoader
        case .imageCoder: cold?.imageCoder
        case .imageTransformer: imageTransformer
        case .cacheKeyFilter: cacheKeyFilter
        case .cacheSerializer: cold?.cacheSerializer
        case .callbackQueue: callbackQueue
        case .imageScaleFactor: imageScaleFactor
        case .imagePreserveAspectRatio: imagePreserveAspectRatio
        case .imageThumbnailPixelSize: imageThumbnailPixelSize
        case .imageScaleDownLimitBytes: imageScaleDownLimitBytes
        case .imageDecodeOptions: imageDecodeOptions
        case .imageEncodeOptions: cold?.imageEncodeOptions
        case .queryCacheType: queryCacheType
        case .storeCacheType: cold?.storeCacheType
        case .originalQueryCacheType: cold?.originalQueryCacheType
        case .originalStoreCacheType: cold?.originalStoreCacheType
        case .originalImageCache: cold?.originalImageCache
        case .downloadRequestModifier: downloadRequestModifier
        case .downloadResponseModifier: cold?.downloadResponseModifier
        case .downloadDecryptor: cold?.downloadDecryptor
        case .loaderCachedImage: cold?.loaderCachedImage
        case .loaderCachedMetadata: cold?.loaderCachedMetadata
        case .setImageOperationKey: cold?.setImageOperationKey
        case .downloadHeaderCheck: cold?.downloadHeaderCheck
        case .cachePartitionKey: cachePartitionKey
        case .loadTimeout: cold?.loadTimeout
        }
    }

    /// Writes `value` into `slot`'s field when it has the field's type (nil clears the field); returns false,
    /// leaving the field unchanged, when it has another type. The raw subscript's setter: the only place that
    /// casts. (The cast happens before the field is written, so no access to a field spans a call: that keeps
    /// the compiler's exclusivity checks static, and reading a field a plain load.)
    func assign(_ slot: ContextSlot, _ value: (any Sendable)?) -> Bool {
        switch slot {
        case .imageCache:
            guard let typed = Self.typed(value, as: (any ImageCacheProtocol).self) else { return false }
            imageCache = typed
        case .imageLoader:
            guard let typed = Self.typed(value, as: (any ImageLoader).self) else { return false }
            imageLoader = typed
        case .imageCoder:
            guard let typed = Self.typed(value, as: (any ImageCoder).self) else { return false }
            if typed != nil || cold != nil { coldFields.imageCoder = typed }
        case .imageTransformer:
            guard let typed = Self.typed(value, as: (any Transformer).self) else { return false }
            let key = typed.map { TransformerKeyPart(key: $0.transformerKey) }
            imageTransformer = typed
            imageTransformerKey = key
        case .cacheKeyFilter:
            guard let typed = Self.typed(value, as: (any CacheKeyFilter).self) else { return false }
            cacheKeyFilter = typed
        case .cacheSerializer:
            guard let typed = Self.typed(value, as: (any CacheSerializer).self) else { return false }
            if typed != nil || cold != nil { coldFields.cacheSerializer = typed }
        case .callbackQueue:
            guard let typed = Self.typed(value, as: CallbackQueue.self) else { return false }
            callbackQueue = typed
        case .imageScaleFactor:
            guard let typed = Self.number(value) else { return false }
            imageScaleFactor = typed
        case .imagePreserveAspectRatio:
            guard let typed = Self.typed(value, as: Bool.self) else { return false }
            imagePreserveAspectRatio = typed
        case .imageThumbnailPixelSize:
            guard let typed = Self.typed(value, as: PixelSize.self) else { return false }
            imageThumbnailPixelSize = typed
        case .imageScaleDownLimitBytes:
            guard let typed = Self.integer(value) else { return false }
            imageScaleDownLimitBytes = typed
        case .imageDecodeOptions:
            guard let typed = Self.typed(value, as: ImageDecodeOptions.self) else { return false }
            imageDecodeOptions = typed
        case .imageEncodeOptions:
            guard let typed = Self.typed(value, as: ImageEncodeOptions.self) else { return false }
            if typed != nil || cold != nil { coldFields.imageEncodeOptions = typed }
        case .queryCacheType:
            guard let typed = Self.typed(value, as: ImageCacheType.self) else { return false }
            queryCacheType = typed
        case .storeCacheType:
            guard let typed = Self.typed(value, as: ImageCacheType.self) else { return false }
            if typed != nil || cold != nil { coldFields.storeCacheType = typed }
        case .originalQueryCacheType:
            guard let typed = Self.typed(value, as: ImageCacheType.self) else { return false }
            if typed != nil || cold != nil { coldFields.originalQueryCacheType = typed }
        case .originalStoreCacheType:
            guard let typed = Self.typed(value, as: ImageCacheType.self) else { return false }
            if typed != nil || cold != nil { coldFields.originalStoreCacheType = typed }
        case .originalImageCache:
            guard let typed = Self.typed(value, as: (any ImageCacheProtocol).self) else { return false }
            if typed != nil || cold != nil { coldFields.originalImageCache = typed }
        case .downloadRequestModifier:
            guard let typed = Self.typed(value, as: (any RequestModifier).self) else { return false }
            downloadRequestModifier = typed
        case .downloadResponseModifier:
            guard let typed = Self.typed(value, as: (any ResponseModifier).self) else { return false }
            if typed != nil || cold != nil { coldFields.downloadResponseModifier = typed }
        case .downloadDecryptor:
            guard let typed = Self.typed(value, as: (any DownloadDecryptor).self) else { return false }
            if typed != nil || cold != nil { coldFields.downloadDecryptor = typed }
        case .loaderCachedImage:
            guard let typed = Self.typed(value, as: Image.self) else { return false }
            if typed != nil || cold != nil { coldFields.loaderCachedImage = typed }
        case .loaderCachedMetadata:
            guard let typed = Self.typed(value, as: CacheEntryMetadata.self) else { return false }
            if typed != nil || cold != nil { coldFields.loaderCachedMetadata = typed }
        case .setImageOperationKey:
            guard let typed = Self.typed(value, as: String.self) else { return false }
            if typed != nil || cold != nil { coldFields.setImageOperationKey = typed }
        case .downloadHeaderCheck:
            guard let typed = Self.typed(value, as: DownloadHeaderCheck.self) else { return false }
            if typed != nil || cold != nil { coldFields.downloadHeaderCheck = typed }
        case .cachePartitionKey:
            guard let typed = Self.typed(value, as: String.self) else { return false }
            cachePartitionKey = typed
        case .loadTimeout:
            guard let typed = Self.number(value) else { return false }
            if typed != nil || cold != nil { coldFields.loadTimeout = typed }
        }
        return true
    }

    /// `value` as a `T?` (`.some(nil)` for nil), or nil when it has another type.
    private static func typed<T>(_ value: (any Sendable)?, as type: T.Type) -> T?? {
        guard let value else { return .some(nil) }
        guard let typed = value as? T else { return nil }
        return .some(typed)
    }

    /// `value` as a `Double?` for a key whose accessor is `Double?`: any integer or floating-point number converts.
    /// A dictionary of `any Sendable` keeps an integer literal an `Int`, so `[.loadTimeout: 5]` means 5 seconds
    /// rather than a value of another type that the accessor (and the manager) would not see.
    private static func number(_ value: (any Sendable)?) -> Double?? {
        guard let value else { return .some(nil) }
        switch value {
        case let double as Double: return .some(double)
        case let float as Float: return .some(Double(float))
        case let integer as any BinaryInteger: return .some(Double(integer))
        default: return nil
        }
    }

    /// `value` as an `Int?` for a key whose accessor is `Int?`: any integer that fits, and a floating-point
    /// number with no fraction that fits (`[.imageScaleDownLimitBytes: 4e6]`); other values are of another type.
    private static func integer(_ value: (any Sendable)?) -> Int?? {
        guard let value else { return .some(nil) }
        let converted: Int? =
            switch value {
            case let integer as any BinaryInteger: Int(exactly: integer)
            case let double as Double: Int(exactly: double)
            case let float as Float: Int(exactly: float)
            default: nil
            }
        return converted.map { .some($0) }
    }
}

/// The part of a ``ContextStorage`` for keys loads rarely set, and for plugin keys. Owned by one storage
/// (copied with it); see ``ContextStorage`` for why it may be `@unchecked Sendable`.
final class ColdContextFields: @unchecked Sendable {
    var imageCoder: (any ImageCoder)?
    var cacheSerializer: (any CacheSerializer)?
    var imageEncodeOptions: ImageEncodeOptions?
    var storeCacheType: ImageCacheType?
    var originalQueryCacheType: ImageCacheType?
    var originalStoreCacheType: ImageCacheType?
    var originalImageCache: (any ImageCacheProtocol)?
    var downloadResponseModifier: (any ResponseModifier)?
    var downloadDecryptor: (any DownloadDecryptor)?
    var loaderCachedImage: Image?
    var loaderCachedMetadata: CacheEntryMetadata?
    var setImageOperationKey: String?
    var downloadHeaderCheck: DownloadHeaderCheck?
    var loadTimeout: Double?
    var others: [ImageContextOption: any Sendable] = [:]
    var pluginNones: Set<ImageContextOption> = []

    init() {}

    func copy() -> ColdContextFields {
        let copy = ColdContextFields()
        copy.imageCoder = imageCoder
        copy.cacheSerializer = cacheSerializer
        copy.imageEncodeOptions = imageEncodeOptions
        copy.storeCacheType = storeCacheType
        copy.originalQueryCacheType = originalQueryCacheType
        copy.originalStoreCacheType = originalStoreCacheType
        copy.originalImageCache = originalImageCache
        copy.downloadResponseModifier = downloadResponseModifier
        copy.downloadDecryptor = downloadDecryptor
        copy.loaderCachedImage = loaderCachedImage
        copy.loaderCachedMetadata = loaderCachedMetadata
        copy.setImageOperationKey = setImageOperationKey
        copy.downloadHeaderCheck = downloadHeaderCheck
        copy.loadTimeout = loadTimeout
        copy.others = others
        copy.pluginNones = pluginNones
        return copy
    }
}

/// The manager's transformer, cache-key filter and serializer, layered under a load's context instead of copied
/// into it (see ``ImageContext/layering(_:)``). Immutable; the manager makes a new one when a setting changes.
final class ContextDefaults: Sendable {
    let transformer: (any Transformer)?
    /// `transformer?.transformerKey` and its key part, made once when the manager's transformer was set.
    let transformerKey: TransformerKeyPart?
    let cacheKeyFilter: (any CacheKeyFilter)?
    let cacheSerializer: (any CacheSerializer)?

    /// Creates the layer; `transformerKey` is `transformer?.transformerKey`, read by the caller outside any lock.
    init(
        transformer: (any Transformer)?, transformerKey: String?, cacheKeyFilter: (any CacheKeyFilter)?,
        cacheSerializer: (any CacheSerializer)?
    ) {
        self.transformer = transformer
        self.transformerKey = transformerKey.map(TransformerKeyPart.init(key:))
        self.cacheKeyFilter = cacheKeyFilter
        self.cacheSerializer = cacheSerializer
        values =
            (transformer == nil ? 0 : ContextSlot.imageTransformer.bit)
            | (cacheKeyFilter == nil ? 0 : ContextSlot.cacheKeyFilter.bit)
            | (cacheSerializer == nil ? 0 : ContextSlot.cacheSerializer.bit)
    }

    /// The slots this layer has a value for.
    let values: UInt32

    /// True when no default is set (nothing to layer).
    var isEmpty: Bool { values == 0 }

    /// The default for `slot`, for the three slots the manager fills; nil for the others.
    func boxedValue(_ slot: ContextSlot) -> (any Sendable)? {
        switch slot {
        case .imageTransformer: transformer
        case .cacheKeyFilter: cacheKeyFilter
        case .cacheSerializer: cacheSerializer
        default: nil
        }
    }
}
