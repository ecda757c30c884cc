import Foundation

/// Everything one load resolved from its URL, options and effective context.
final class LoadPlan: Sendable {
    let url: URL
    let options: ImageOptions
    let context: ImageContext
    /// The cache key (with thumbnail and transformer suffixes); nil when uncacheable.
    let key: String?
    /// The key of the untransformed original (the filtered URL); nil when uncacheable.
    let originalKey: String?
    let transformer: (any Transformer)?
    let decodeOptions: ImageDecodeOptions
    let cache: any ImageCacheProtocol
    let originalCache: any ImageCacheProtocol
    let loader: any ImageLoader
    let coder: (any ImageCoder)?
    let serializer: any CacheSerializer
    let queryCacheType: ImageCacheType
    let storeCacheType: ImageCacheType
    let originalQueryCacheType: ImageCacheType
    let originalStoreCacheType: ImageCacheType
    let callbackQueue: CallbackQueue
    /// True when the request's own context named loader-affecting strategies, so its download is not shared.
    let isolatesDownload: Bool

    /// True when a thumbnail or a transformer makes the key differ from the original's.
    var isDerived: Bool { key != originalKey }

    /// Computes key and original key from the filter, thumbnail and transformer of `context`.
    static func keys(for url: URL, context: ImageContext) -> (key: String?, originalKey: String?) {
        let base: String?
        if let filter = context.cacheKeyFilter { base = filter.cacheKey(for: url) } else { base = url.absoluteString }
        guard let base else { return (nil, nil) }
        let thumbnail = context.imageThumbnailPixelSize.map {
            CacheKeys.thumbnailSuffix($0, preserveAspectRatio: context.imagePreserveAspectRatio ?? true)
        }
        let key = CacheKeys.key(
            base: base, url: url, thumbnail: thumbnail, transformerKey: context.imageTransformer?.transformerKey)
        return (key, base)
    }

    /// Default byte budget for ``ImageOptions/scaleDownLargeImages`` without a context value: 60 MB of RGBA.
    static let defaultScaleDownLimitBytes = 60 << 20

    init(url: URL, options: ImageOptions, context: ImageContext, manager: ImageManager, requestContext: ImageContext) {
        self.url = url
        self.options = options
        self.context = context
        (key, originalKey) = Self.keys(for: url, context: context)
        transformer = context.imageTransformer
        var decode = context.imageDecodeOptions ?? ImageDecodeOptions()
        if let thumb = context.imageThumbnailPixelSize { decode.thumbnailPixelSize = thumb }
        if let preserve = context.imagePreserveAspectRatio { decode.preserveAspectRatio = preserve }
        if options.contains(.scaleDownLargeImages) {
            decode.scaleDownLimitBytes = context.imageScaleDownLimitBytes ?? Self.defaultScaleDownLimitBytes
        }
        if options.contains(.decodeFirstFrameOnly) { decode.firstFrameOnly = true }
        if options.contains(.preloadAllFrames) { decode.preloadAllFrames = true }
        if let scale = context.imageScaleFactor { decode.scaleFactor = scale }
        decodeOptions = decode
        cache = context.imageCache ?? manager.imageCache
        originalCache = context.originalImageCache ?? cache
        loader = context.imageLoader ?? manager.imageLoader
        coder = context.imageCoder
        serializer =
            context.cacheSerializer ?? DefaultCacheSerializer(coder: context.imageCoder ?? CodersManager.shared)
        queryCacheType = context.queryCacheType ?? .all
        storeCacheType = context.storeCacheType ?? .all
        originalQueryCacheType = context.originalQueryCacheType ?? .all
        originalStoreCacheType = context.originalStoreCacheType ?? .disk
        callbackQueue = context.callbackQueue ?? .current
        let isolatingKeys: [ImageContextOption] = [
            .imageLoader, .downloadRequestModifier, .downloadResponseModifier, .downloadDecryptor, .imageCache,
            .originalImageCache, .cacheSerializer,
        ]
        isolatesDownload = isolatingKeys.contains { requestContext[$0] != nil }
    }
}

extension ImageManager {
    /// The request's context with the manager's transformer, filter and serializer filled in where it names none
    /// (an explicit none counts as naming one).
    func mergedContext(_ context: ImageContext) -> ImageContext {
        let current = settings.withLock { ($0.transformer, $0.cacheKeyFilter, $0.cacheSerializer) }
        var merged = context
        if !merged.contains(.imageTransformer), let transformer = current.0 { merged.imageTransformer = transformer }
        if !merged.contains(.cacheKeyFilter), let filter = current.1 { merged.cacheKeyFilter = filter }
        if !merged.contains(.cacheSerializer), let serializer = current.2 { merged.cacheSerializer = serializer }
        return merged
    }
}
