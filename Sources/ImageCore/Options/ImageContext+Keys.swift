import Foundation

extension ImageContextOption {
    /// An ``ImageCacheProtocol`` used instead of the manager's cache.
    public static let imageCache = ImageContextOption("imageCache")
    /// An ``ImageLoader`` used instead of the manager's loader.
    public static let imageLoader = ImageContextOption("imageLoader")
    /// An ``ImageCoder`` used instead of ``CodersManager/shared``.
    public static let imageCoder = ImageContextOption("imageCoder")
    /// A ``Transformer`` (explicit none disables the manager's).
    public static let imageTransformer = ImageContextOption("imageTransformer")
    /// A ``CacheKeyFilter``.
    public static let cacheKeyFilter = ImageContextOption("cacheKeyFilter")
    /// A ``CacheSerializer``.
    public static let cacheSerializer = ImageContextOption("cacheSerializer")
    /// A ``CallbackQueue`` for this load's callbacks.
    public static let callbackQueue = ImageContextOption("callbackQueue")
    /// `Double`: the scale factor recorded in decode options.
    public static let imageScaleFactor = ImageContextOption("imageScaleFactor")
    /// `Bool`: keep the aspect ratio when decoding a thumbnail (default true).
    public static let imagePreserveAspectRatio = ImageContextOption("imagePreserveAspectRatio")
    /// ``PixelSize``: decode as a thumbnail that fits this size.
    public static let imageThumbnailPixelSize = ImageContextOption("imageThumbnailPixelSize")
    /// `Int`: byte budget for ``ImageOptions/scaleDownLargeImages``.
    public static let imageScaleDownLimitBytes = ImageContextOption("imageScaleDownLimitBytes")
    /// ``ImageDecodeOptions``: base decode options (the pixel budget lives here).
    public static let imageDecodeOptions = ImageContextOption("imageDecodeOptions")
    /// ``ImageEncodeOptions``: options for the serializer's encodes.
    public static let imageEncodeOptions = ImageContextOption("imageEncodeOptions")
    /// ``ImageCacheType``: levels to query (default all).
    public static let queryCacheType = ImageContextOption("queryCacheType")
    /// ``ImageCacheType``: levels to store the result in (default all).
    public static let storeCacheType = ImageContextOption("storeCacheType")
    /// ``ImageCacheType``: levels to query for the untransformed original (default disk).
    public static let originalQueryCacheType = ImageContextOption("originalQueryCacheType")
    /// ``ImageCacheType``: levels to store the untransformed original in (default disk, when transformed).
    public static let originalStoreCacheType = ImageContextOption("originalStoreCacheType")
    /// An ``ImageCacheProtocol`` for originals, instead of the main cache.
    public static let originalImageCache = ImageContextOption("originalImageCache")
    /// A ``RequestModifier`` for this load's request.
    public static let downloadRequestModifier = ImageContextOption("downloadRequestModifier")
    /// A ``ResponseModifier`` for this load's response.
    public static let downloadResponseModifier = ImageContextOption("downloadResponseModifier")
    /// A ``DownloadDecryptor`` for this load's bytes.
    public static let downloadDecryptor = ImageContextOption("downloadDecryptor")
    /// ``Image``: set by the manager for the loader during ``ImageOptions/refreshCached``.
    public static let loaderCachedImage = ImageContextOption("loaderCachedImage")
    /// ``CacheEntryMetadata``: the cached entry's validators, set by the manager for revalidation.
    public static let loaderCachedMetadata = ImageContextOption("loaderCachedMetadata")
    /// `String`: the ``ImageTarget`` operation key (default: the target's type name).
    public static let setImageOperationKey = ImageContextOption("setImageOperationKey")
    /// `Double`, seconds: the longest the load may take (see ``ImageContext/loadTimeout``).
    public static let loadTimeout = ImageContextOption("loadTimeout")
}

extension ImageContext {
    /// The cache for this load.
    public var imageCache: (any ImageCacheProtocol)? {
        get { storage.imageCache }
        set { update(.imageCache, hasValue: newValue != nil) { $0.imageCache = newValue } }
    }
    /// The loader for this load.
    public var imageLoader: (any ImageLoader)? {
        get { storage.imageLoader }
        set { update(.imageLoader, hasValue: newValue != nil) { $0.imageLoader = newValue } }
    }
    /// The coder for this load.
    public var imageCoder: (any ImageCoder)? {
        get { storage.cold?.imageCoder }
        set { update(.imageCoder, hasValue: newValue != nil) { $0.coldFields.imageCoder = newValue } }
    }
    /// The transformer for this load; use `setExplicitNone(.imageTransformer)` to disable the manager's.
    public var imageTransformer: (any Transformer)? {
        get {
            if let value = storage.imageTransformer { return value }
            return hasOwnEntry(.imageTransformer) ? nil : defaults?.transformer
        }
        set {
            update(.imageTransformer, hasValue: newValue != nil) {
                $0.imageTransformer = newValue
                $0.imageTransformerKey = newValue.map { TransformerKeyPart(key: $0.transformerKey) }
            }
        }
    }
    /// The cache-key filter for this load.
    public var cacheKeyFilter: (any CacheKeyFilter)? {
        get {
            if let value = storage.cacheKeyFilter { return value }
            return hasOwnEntry(.cacheKeyFilter) ? nil : defaults?.cacheKeyFilter
        }
        set { update(.cacheKeyFilter, hasValue: newValue != nil) { $0.cacheKeyFilter = newValue } }
    }
    /// The cache serializer for this load.
    public var cacheSerializer: (any CacheSerializer)? {
        get {
            if let value = storage.cold?.cacheSerializer { return value }
            return hasOwnEntry(.cacheSerializer) ? nil : defaults?.cacheSerializer
        }
        set { update(.cacheSerializer, hasValue: newValue != nil) { $0.coldFields.cacheSerializer = newValue } }
    }
    /// Where callbacks go.
    public var callbackQueue: CallbackQueue? {
        get { storage.callbackQueue }
        set { update(.callbackQueue, hasValue: newValue != nil) { $0.callbackQueue = newValue } }
    }
    /// Scale factor.
    public var imageScaleFactor: Double? {
        get { storage.imageScaleFactor }
        set { update(.imageScaleFactor, hasValue: newValue != nil) { $0.imageScaleFactor = newValue } }
    }
    /// Keep the aspect ratio for thumbnails.
    public var imagePreserveAspectRatio: Bool? {
        get { storage.imagePreserveAspectRatio }
        set { update(.imagePreserveAspectRatio, hasValue: newValue != nil) { $0.imagePreserveAspectRatio = newValue } }
    }
    /// Thumbnail size.
    public var imageThumbnailPixelSize: PixelSize? {
        get { storage.imageThumbnailPixelSize }
        set { update(.imageThumbnailPixelSize, hasValue: newValue != nil) { $0.imageThumbnailPixelSize = newValue } }
    }
    /// Scale-down byte budget.
    public var imageScaleDownLimitBytes: Int? {
        get { storage.imageScaleDownLimitBytes }
        set { update(.imageScaleDownLimitBytes, hasValue: newValue != nil) { $0.imageScaleDownLimitBytes = newValue } }
    }
    /// Base decode options.
    public var imageDecodeOptions: ImageDecodeOptions? {
        get { storage.imageDecodeOptions }
        set { update(.imageDecodeOptions, hasValue: newValue != nil) { $0.imageDecodeOptions = newValue } }
    }
    /// Encode options.
    public var imageEncodeOptions: ImageEncodeOptions? {
        get { storage.cold?.imageEncodeOptions }
        set { update(.imageEncodeOptions, hasValue: newValue != nil) { $0.coldFields.imageEncodeOptions = newValue } }
    }
    /// Cache levels to query.
    public var queryCacheType: ImageCacheType? {
        get { storage.queryCacheType }
        set { update(.queryCacheType, hasValue: newValue != nil) { $0.queryCacheType = newValue } }
    }
    /// Cache levels to store into.
    public var storeCacheType: ImageCacheType? {
        get { storage.cold?.storeCacheType }
        set { update(.storeCacheType, hasValue: newValue != nil) { $0.coldFields.storeCacheType = newValue } }
    }
    /// Cache levels to query for the original.
    public var originalQueryCacheType: ImageCacheType? {
        get { storage.cold?.originalQueryCacheType }
        set {
            update(.originalQueryCacheType, hasValue: newValue != nil) {
                $0.coldFields.originalQueryCacheType = newValue
            }
        }
    }
    /// Cache levels to store the original into.
    public var originalStoreCacheType: ImageCacheType? {
        get { storage.cold?.originalStoreCacheType }
        set {
            update(.originalStoreCacheType, hasValue: newValue != nil) {
                $0.coldFields.originalStoreCacheType = newValue
            }
        }
    }
    /// Cache for originals.
    public var originalImageCache: (any ImageCacheProtocol)? {
        get { storage.cold?.originalImageCache }
        set { update(.originalImageCache, hasValue: newValue != nil) { $0.coldFields.originalImageCache = newValue } }
    }
    /// Request modifier.
    public var downloadRequestModifier: (any RequestModifier)? {
        get { storage.downloadRequestModifier }
        set { update(.downloadRequestModifier, hasValue: newValue != nil) { $0.downloadRequestModifier = newValue } }
    }
    /// Response modifier.
    public var downloadResponseModifier: (any ResponseModifier)? {
        get { storage.cold?.downloadResponseModifier }
        set {
            update(.downloadResponseModifier, hasValue: newValue != nil) {
                $0.coldFields.downloadResponseModifier = newValue
            }
        }
    }
    /// Decryptor.
    public var downloadDecryptor: (any DownloadDecryptor)? {
        get { storage.cold?.downloadDecryptor }
        set { update(.downloadDecryptor, hasValue: newValue != nil) { $0.coldFields.downloadDecryptor = newValue } }
    }
    /// The cached image handed to the loader for revalidation.
    public var loaderCachedImage: Image? {
        get { storage.cold?.loaderCachedImage }
        set { update(.loaderCachedImage, hasValue: newValue != nil) { $0.coldFields.loaderCachedImage = newValue } }
    }
    /// The cached entry's validators handed to the loader for revalidation.
    public var loaderCachedMetadata: CacheEntryMetadata? {
        get { storage.cold?.loaderCachedMetadata }
        set {
            update(.loaderCachedMetadata, hasValue: newValue != nil) { $0.coldFields.loaderCachedMetadata = newValue }
        }
    }
    /// The ``ImageTarget`` operation key.
    public var setImageOperationKey: String? {
        get { storage.cold?.setImageOperationKey }
        set {
            update(.setImageOperationKey, hasValue: newValue != nil) { $0.coldFields.setImageOperationKey = newValue }
        }
    }
    /// The longest this load may take, in seconds, counted from the call that started it to its final result:
    /// the cache queries, the wait for a download place (``ImageManager/maxDownloadsAheadOfDecoding``) and in the
    /// loader's queue, the transfer, the decode and the transform.
    ///
    /// When it passes first, the load ends with ``ImageError/Code/timedOut`` (stage `request`) and leaves its work
    /// as ``ImageLoadOperation/cancel()`` does: a download or decode it shares with other loads goes on for them,
    /// and one it alone waited for is cancelled. Not part of the cache key, never a reason to block the URL, and
    /// free for loads that don't set it. The deadline fires on a thread of the SDK's own, not dispatch's shared pool,
    /// so CPU-bound work elsewhere in the process does not hold it back; a load it ends completes on that thread
    /// with ``CallbackQueue/current``. A loader's own transfer deadline (`HTTPLoader`'s
    /// `maximumTransferDuration`) still applies within it. Nil (the default): no deadline of the load's own.
    public var loadTimeout: Double? {
        get { storage.cold?.loadTimeout }
        set { update(.loadTimeout, hasValue: newValue != nil) { $0.coldFields.loadTimeout = newValue } }
    }

    /// The transformer's key, read once when the transformer was stored (here or as the manager's transformer).
    var imageTransformerKey: String? { imageTransformerKeyPart?.key }

    /// ``imageTransformerKeyPart`` passed to `body` without a retain: this context's storage (or the manager's
    /// defaults) holds it for as long as the context is borrowed, which covers the call. Nil without a transformer.
    @inline(__always)
    func withImageTransformerKeyPart<R>(_ body: (TransformerKeyPart) -> R) -> R? {
        if storage.values & ContextSlot.imageTransformer.bit != 0 {
            return storage.unretainedTransformerKey?._withUnsafeGuaranteedRef(body)
        }
        return hasOwnEntry(.imageTransformer) ? nil : defaults?.transformerKey.map(body)
    }

    /// The transformer's key with its cache-key part, made once when the transformer was stored.
    var imageTransformerKeyPart: TransformerKeyPart? {
        if storage.values & ContextSlot.imageTransformer.bit != 0 { return storage.imageTransformerKey }
        return hasOwnEntry(.imageTransformer) ? nil : defaults?.transformerKey
    }
}
