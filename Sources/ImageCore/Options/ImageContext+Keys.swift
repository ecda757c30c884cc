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
}

extension ImageContext {
    /// The cache for this load.
    public var imageCache: (any ImageCacheProtocol)? {
        get { value(.imageCache) }
        set { self[.imageCache] = newValue }
    }
    /// The loader for this load.
    public var imageLoader: (any ImageLoader)? {
        get { value(.imageLoader) }
        set { self[.imageLoader] = newValue }
    }
    /// The coder for this load.
    public var imageCoder: (any ImageCoder)? {
        get { value(.imageCoder) }
        set { self[.imageCoder] = newValue }
    }
    /// The transformer for this load; use `setExplicitNone(.imageTransformer)` to disable the manager's.
    public var imageTransformer: (any Transformer)? {
        get { value(.imageTransformer) }
        set { self[.imageTransformer] = newValue }
    }
    /// The cache-key filter for this load.
    public var cacheKeyFilter: (any CacheKeyFilter)? {
        get { value(.cacheKeyFilter) }
        set { self[.cacheKeyFilter] = newValue }
    }
    /// The cache serializer for this load.
    public var cacheSerializer: (any CacheSerializer)? {
        get { value(.cacheSerializer) }
        set { self[.cacheSerializer] = newValue }
    }
    /// Where callbacks go.
    public var callbackQueue: CallbackQueue? {
        get { value(.callbackQueue) }
        set { self[.callbackQueue] = newValue }
    }
    /// Scale factor.
    public var imageScaleFactor: Double? {
        get { value(.imageScaleFactor) }
        set { self[.imageScaleFactor] = newValue }
    }
    /// Keep the aspect ratio for thumbnails.
    public var imagePreserveAspectRatio: Bool? {
        get { value(.imagePreserveAspectRatio) }
        set { self[.imagePreserveAspectRatio] = newValue }
    }
    /// Thumbnail size.
    public var imageThumbnailPixelSize: PixelSize? {
        get { value(.imageThumbnailPixelSize) }
        set { self[.imageThumbnailPixelSize] = newValue }
    }
    /// Scale-down byte budget.
    public var imageScaleDownLimitBytes: Int? {
        get { value(.imageScaleDownLimitBytes) }
        set { self[.imageScaleDownLimitBytes] = newValue }
    }
    /// Base decode options.
    public var imageDecodeOptions: ImageDecodeOptions? {
        get { value(.imageDecodeOptions) }
        set { self[.imageDecodeOptions] = newValue }
    }
    /// Encode options.
    public var imageEncodeOptions: ImageEncodeOptions? {
        get { value(.imageEncodeOptions) }
        set { self[.imageEncodeOptions] = newValue }
    }
    /// Cache levels to query.
    public var queryCacheType: ImageCacheType? {
        get { value(.queryCacheType) }
        set { self[.queryCacheType] = newValue }
    }
    /// Cache levels to store into.
    public var storeCacheType: ImageCacheType? {
        get { value(.storeCacheType) }
        set { self[.storeCacheType] = newValue }
    }
    /// Cache levels to query for the original.
    public var originalQueryCacheType: ImageCacheType? {
        get { value(.originalQueryCacheType) }
        set { self[.originalQueryCacheType] = newValue }
    }
    /// Cache levels to store the original into.
    public var originalStoreCacheType: ImageCacheType? {
        get { value(.originalStoreCacheType) }
        set { self[.originalStoreCacheType] = newValue }
    }
    /// Cache for originals.
    public var originalImageCache: (any ImageCacheProtocol)? {
        get { value(.originalImageCache) }
        set { self[.originalImageCache] = newValue }
    }
    /// Request modifier.
    public var downloadRequestModifier: (any RequestModifier)? {
        get { value(.downloadRequestModifier) }
        set { self[.downloadRequestModifier] = newValue }
    }
    /// Response modifier.
    public var downloadResponseModifier: (any ResponseModifier)? {
        get { value(.downloadResponseModifier) }
        set { self[.downloadResponseModifier] = newValue }
    }
    /// Decryptor.
    public var downloadDecryptor: (any DownloadDecryptor)? {
        get { value(.downloadDecryptor) }
        set { self[.downloadDecryptor] = newValue }
    }
    /// The cached image handed to the loader for revalidation.
    public var loaderCachedImage: Image? {
        get { value(.loaderCachedImage) }
        set { self[.loaderCachedImage] = newValue }
    }
    /// The cached entry's validators handed to the loader for revalidation.
    public var loaderCachedMetadata: CacheEntryMetadata? {
        get { value(.loaderCachedMetadata) }
        set { self[.loaderCachedMetadata] = newValue }
    }
    /// The ``ImageTarget`` operation key.
    public var setImageOperationKey: String? {
        get { value(.setImageOperationKey) }
        set { self[.setImageOperationKey] = newValue }
    }
}
