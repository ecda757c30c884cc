import Foundation

/// Everything one load resolved from its URL, options and effective context: keys, strategies, cache levels.
///
/// An immutable final class: one allocation shared by the closures of the load's stages.
final class LoadPlan: Sendable {
    let url: URL
    let options: ImageOptions
    let context: ImageContext
    /// The cache key (partition, thumbnail, orientation and transformer parts appended); nil when uncacheable.
    let key: String?
    /// The key of the untransformed original (the filtered URL plus any partition); nil when uncacheable.
    let originalKey: String?
    let transformer: (any Transformer)?
    /// Decode options for the original's bytes.
    let decodeOptions: ImageDecodeOptions
    /// Decode options for a derived key's own entry (an encoded product): full size, every frame, no scale-down.
    let productDecodeOptions: ImageDecodeOptions
    let cache: any ImageCacheProtocol
    let originalCache: any ImageCacheProtocol
    let loader: any ImageLoader
    /// The context's coder, if it names one (part of the decode key).
    let coder: (any ImageCoder)?
    /// The coder that decodes: the context's, else the manager's registry.
    let decoder: any ImageCoder
    let serializer: any CacheSerializer
    let queryCacheType: ImageCacheType
    let storeCacheType: ImageCacheType
    let originalQueryCacheType: ImageCacheType
    let originalStoreCacheType: ImageCacheType
    let callbackQueue: CallbackQueue
    /// True when the load's download must not be shared: its context names loader-affecting strategies, or it
    /// carries credentials without a partition key.
    let isolatesDownload: Bool
    /// The context's partition key (part of cache and download keys).
    let partitionKey: String?
    /// True when the request carries credentials (a request modifier, or the loader says so).
    let carriesCredentials: Bool
    /// The manager stores `Cache-Control: private` responses (``ImageManager/cachesPrivateResponses``).
    let cachesPrivateResponses: Bool

    /// True when a thumbnail, orientation or transformer part makes the key differ from the original's.
    var isDerived: Bool { key != originalKey }

    /// Default byte budget for ``ImageOptions/scaleDownLargeImages`` without a context value: 60 MB of RGBA.
    static let defaultScaleDownLimitBytes = 60 << 20

    init(url: URL, options: ImageOptions, context: ImageContext, manager: ImageManager, requestContext: ImageContext) {
        self.url = url
        self.options = options
        self.context = context
        let decode = Self.decodeOptions(options: options, context: context)
        decodeOptions = decode
        var product = decode
        product.thumbnailPixelSize = nil
        product.scaleDownLimitBytes = nil
        product.firstFrameOnly = false
        productDecodeOptions = product
        transformer = context.imageTransformer
        cache = context.imageCache ?? manager.imageCache
        originalCache = context.originalImageCache ?? cache
        loader = context.imageLoader ?? manager.imageLoader
        coder = context.imageCoder
        decoder = context.imageCoder ?? manager.coders
        serializer = context.cacheSerializer ?? DefaultCacheSerializer(coder: decoder)
        callbackQueue = context.callbackQueue ?? .current
        cachesPrivateResponses = manager.cachesPrivateResponses
        partitionKey = context.cachePartitionKey
        carriesCredentials =
            context[.downloadRequestModifier] != nil
            || loader.requestCarriesCredentials(for: url, options: options, context: context)
        let shareable = !carriesCredentials || partitionKey != nil
        (key, originalKey) =
            shareable ? Self.keys(for: url, context: context, decodeOptions: decode) : (nil, nil)
        queryCacheType = shareable ? context.queryCacheType ?? .all : .none
        storeCacheType = shareable ? context.storeCacheType ?? .all : .none
        originalQueryCacheType = shareable ? context.originalQueryCacheType ?? .all : .none
        originalStoreCacheType = shareable ? context.originalStoreCacheType ?? .disk : .none
        // Strategies that change what the loader does, or where results go, make a download of its own. The
        // effective context counts (an options processor may inject a modifier); the serializer only when the
        // request named it (the manager's own serializer is merged into every context).
        let isolatingKeys: [ImageContextOption] = [
            .imageLoader, .downloadRequestModifier, .downloadResponseModifier, .downloadDecryptor, .imageCache,
            .originalImageCache,
        ]
        isolatesDownload =
            !shareable || isolatingKeys.contains { context[$0] != nil } || requestContext[.cacheSerializer] != nil
    }

    /// The decode options a load uses for original bytes.
    static func decodeOptions(options: ImageOptions, context: ImageContext) -> ImageDecodeOptions {
        var decode = context.imageDecodeOptions ?? ImageDecodeOptions()
        if let thumb = context.imageThumbnailPixelSize { decode.thumbnailPixelSize = thumb }
        if let preserve = context.imagePreserveAspectRatio { decode.preserveAspectRatio = preserve }
        if options.contains(.scaleDownLargeImages) {
            decode.scaleDownLimitBytes = context.imageScaleDownLimitBytes ?? Self.defaultScaleDownLimitBytes
        }
        if options.contains(.decodeFirstFrameOnly) { decode.firstFrameOnly = true }
        if options.contains(.preloadAllFrames) { decode.preloadAllFrames = true }
        if let scale = context.imageScaleFactor { decode.scaleFactor = scale }
        return decode
    }

    /// Key and original key: the filter's base, then the parts that change what the key means.
    static func keys(
        for url: URL, context: ImageContext, decodeOptions: ImageDecodeOptions
    ) -> (key: String?, originalKey: String?) {
        let base: String?
        if let filter = context.cacheKeyFilter { base = filter.cacheKey(for: url) } else { base = url.absoluteString }
        guard let base else { return (nil, nil) }
        let partition = context.cachePartitionKey.map(CacheKeys.partitionPart)
        var thumbnail: String?
        if let size = decodeOptions.thumbnailPixelSize, size.width > 0, size.height > 0 {
            thumbnail = CacheKeys.thumbnailSuffix(size, preserveAspectRatio: decodeOptions.preserveAspectRatio)
        }
        let orientation = decodeOptions.applyOrientation ? nil : CacheKeys.rawOrientationPart
        let original = CacheKeys.key(base: base, url: url, parts: [partition])
        let key = CacheKeys.key(
            base: base, url: url,
            parts: [partition, thumbnail, orientation, context.imageTransformer?.transformerKey])
        return (key, original)
    }

    // MARK: What a cached image can serve

    /// The image this load delivers for a cached image of its key, or nil when that level cannot honour the
    /// load's options (see the key table in ARCHITECTURE.md):
    /// - a transformed key holding an animation (made with ``ImageOptions/transformAnimatedImage``) cannot serve
    ///   a load without that option, which wants the untransformed animation;
    /// - with a scale-down budget, an image over the budget cannot be served (the load decodes smaller);
    /// - first-frame-only loads get the first frame of an animation.
    func deliverable(fromCached image: Image) -> Image? {
        if transformer != nil, image.isAnimated, !options.contains(.transformAnimatedImage) { return nil }
        if let limit = decodeOptions.scaleDownLimitBytes, limit > 0 {
            let (pixels, overflow) = image.width.multipliedReportingOverflow(by: image.height)
            if overflow || pixels > limit / 4 { return nil }
        }
        if decodeOptions.firstFrameOnly, image.isAnimated { return image.with(frames: [image.frames[0]]) }
        return image
    }

    /// True when an image decoded from the original with this load's options is what its key means, so it may be
    /// stored under the key: not shrunk by the scale-down budget, not cut to its first frame (unless the source
    /// has one frame), and transformed if the key says so.
    func isCanonical(decoded image: Image, sourceFrameCount: Int?, transformSkipped: Bool) -> Bool {
        if transformSkipped { return false }
        if decodeOptions.firstFrameOnly, sourceFrameCount != 1 { return false }
        if decodeOptions.scaleDownLimitBytes != nil {
            guard let width = image.metadata.sourcePixelWidth, let height = image.metadata.sourcePixelHeight else {
                return false
            }
            var unscaled = decodeOptions
            unscaled.scaleDownLimitBytes = nil
            let full = unscaled.targetSize(forSourceWidth: width, height: height)
            if image.width * image.height < full.width * full.height { return false }
        }
        return true
    }
}

extension ImageManager {
    /// The request's context with the manager's transformer, filter and serializer filled in where it names none
    /// (an explicit none counts as naming one).
    func mergedContext(_ context: ImageContext) -> ImageContext {
        let current = settings.withLock { ($0.transformer, $0.cacheKeyFilter, $0.cacheSerializer) }
        guard current.0 != nil || current.1 != nil || current.2 != nil else { return context }
        var merged = context
        if !merged.contains(.imageTransformer), let transformer = current.0 { merged.imageTransformer = transformer }
        if !merged.contains(.cacheKeyFilter), let filter = current.1 { merged.cacheKeyFilter = filter }
        if !merged.contains(.cacheSerializer), let serializer = current.2 { merged.cacheSerializer = serializer }
        return merged
    }
}
