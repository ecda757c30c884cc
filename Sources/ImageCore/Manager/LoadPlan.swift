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
    /// The transformer's key, read once.
    let transformerKey: String?
    /// Decode options for the original's bytes.
    let decodeOptions: ImageDecodeOptions
    /// Decode options for a derived key's own entry (an encoded product): full size, every frame, no scale-down, no
    /// image-changing coder option (the product's pixels carry them already).
    let productDecodeOptions: ImageDecodeOptions
    let cache: any ImageCacheProtocol
    let originalCache: any ImageCacheProtocol
    let loader: any ImageLoader
    /// The context's coder, if it names one (part of the decode key).
    let coder: (any ImageCoder)?
    /// The coder that decodes: the context's, else the manager's registry.
    let decoder: any ImageCoder
    let serializer: any CacheSerializer
    /// What makes this load's serializer the same as another's (part of the product key, so loads naming the same
    /// serializer — the manager's, one instance, or equal values — share one transform and one store).
    let serializerIdentity: StrategyIdentity
    let queryCacheType: ImageCacheType
    let storeCacheType: ImageCacheType
    let originalQueryCacheType: ImageCacheType
    let originalStoreCacheType: ImageCacheType
    let callbackQueue: CallbackQueue
    /// True when the load may read and write shared cache entries (no credentials, or a partition key).
    let isShareable: Bool
    /// True when the load's download must not be shared: an active option isolates it
    /// (``OptionTraits/DownloadRule/isolates``: a loader, modifiers, a decryptor, a cache of its own), or it carries
    /// credentials without a partition key.
    var isolatesDownload: Bool { !isShareable || traits.isolatesDownload }
    /// The context's partition key (part of cache and download keys).
    let partitionKey: String?
    /// True when the request carries credentials (a request modifier, or the loader says so).
    let carriesCredentials: Bool
    /// The manager stores `Cache-Control: private` responses (``ImageManager/cachesPrivateResponses``).
    let cachesPrivateResponses: Bool
    /// The manager stores images decoded from cut-short bytes (``ImageManager/storesIncompleteImages``).
    let storesIncompleteImages: Bool

    /// True when a thumbnail, orientation, first-frame, decode or transformer part makes the key differ from the
    /// original's.
    var isDerived: Bool { key != originalKey }

    /// Whether bytes that came with `response` may be stored: not `Cache-Control: no-store`, nor `private` unless
    /// the manager caches private responses.
    func mayStore(_ response: ResponseMetadata) -> Bool {
        let control = response.cacheControl
        return !control.noStore && (!control.isPrivate || cachesPrivateResponses)
    }

    /// True when the only part that makes the key derived is `frames(first)`: a first-frame decode of a still
    /// source is then exactly the original's decode.
    var isDerivedOnlyByFirstFrame: Bool {
        decodeOptions.firstFrameOnly && transformerKey == nil && decodeOptions.thumbnailPixelSize == nil
            && decodeOptions.applyOrientation && decodeOptions.keyPart == nil && coder == nil
            && !context.hasValue(.imageEncodeOptions)
    }

    /// The declarations this load's options make active and the rules they give each seam (``LoadTraits``).
    /// Made on demand: only a miss asks, once or twice (original reuse, download sharing, a failure's verdict).
    var traits: LoadTraits { LoadTraits(options: options, context: context, decodeOptions: decodeOptions) }

    /// True when an already-decoded original (the original key's memory entry, decoded with the default options)
    /// can become this load's image by the steps that work on pixels: every active pixel option applies to a
    /// decoded image (``OptionTraits/appliesToDecodedImage``). Options that act inside the decoder — orientation
    /// left raw, colour conversion, a custom coder's image-changing options, a coder of the load's own — need the
    /// original's bytes instead.
    var decodedOriginalServes: Bool { traits.decodedImageServes }

    /// Default byte budget for ``ImageOptions/scaleDownLargeImages`` without a context value: 60 MB of RGBA.
    static let defaultScaleDownLimitBytes = 60 << 20

    /// The plan of a load whose `lookup` was already resolved (the memory fast path tried it first).
    init(url: URL, lookup: LoadLookup, context: ImageContext, manager: ImageManager) {
        self.url = url
        options = lookup.options
        self.context = context
        decodeOptions = lookup.decodeOptions
        var product = lookup.decodeOptions
        product.thumbnailPixelSize = nil
        product.scaleDownLimitBytes = nil
        product.firstFrameOnly = false
        // A product's pixels already carry a custom coder's image-changing options (and its bytes are their encode).
        if !product.coderOptions.isEmpty { product.coderOptions = product.coderOptions.withoutImageChangingOptions }
        productDecodeOptions = product
        transformer = context.imageTransformer
        transformerKey = context.imageTransformerKey
        cache = context.imageCache ?? manager.imageCache
        originalCache = context.originalImageCache ?? cache
        loader = context.imageLoader ?? manager.imageLoader
        coder = context.imageCoder
        decoder = context.imageCoder ?? manager.coders
        if let named = context.cacheSerializer {
            serializer = named
            serializerIdentity =
                context.hasOwnEntry(.cacheSerializer)
                ? StrategyIdentity(named, unique: manager.nextID()) : .managerDefault
        } else {
            serializer = DefaultCacheSerializer(coder: decoder, options: context.imageEncodeOptions)
            serializerIdentity = .none
        }
        callbackQueue = context.callbackQueue ?? .current
        cachesPrivateResponses = manager.cachesPrivateResponses
        storesIncompleteImages = manager.storesIncompleteImages
        partitionKey = context.cachePartitionKey
        carriesCredentials = lookup.carriesCredentials
        key = lookup.key
        originalKey = lookup.originalKey(url: url, context: context)
        queryCacheType = lookup.queryCacheType
        let shareable = lookup.isShareable
        storeCacheType = shareable ? context.storeCacheType ?? .all : .none
        originalQueryCacheType = shareable ? context.originalQueryCacheType ?? .all : .none
        originalStoreCacheType = shareable ? context.originalStoreCacheType ?? .disk : .none
        isShareable = shareable
    }

    /// The decode options of a load whose options and context change none (most loads): made once.
    static let standardDecodeOptions = ImageDecodeOptions()

    /// The context keys that change a load's decode options.
    private static let decodeSlots =
        ContextSlot.imageDecodeOptions.bit | ContextSlot.imageThumbnailPixelSize.bit
        | ContextSlot.imagePreserveAspectRatio.bit | ContextSlot.imageScaleDownLimitBytes.bit
        | ContextSlot.imageScaleFactor.bit

    /// True when `options` and `context` leave the decode options as ``standardDecodeOptions``.
    static func hasStandardDecodeOptions(options: ImageOptions, context: ImageContext) -> Bool {
        !context.hasOwnEntry(in: decodeSlots)
            && options.isDisjoint(with: [.scaleDownLargeImages, .decodeFirstFrameOnly, .preloadAllFrames])
    }

    /// The decode options a load uses for original bytes.
    static func decodeOptions(options: ImageOptions, context: ImageContext) -> ImageDecodeOptions {
        if hasStandardDecodeOptions(options: options, context: context) { return standardDecodeOptions }
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

    /// The keys of a load: `key`, and what its original's key is made of. The original key itself is built only
    /// when a load needs it (a miss): a memory hit of a derived key never asks for it.
    struct Keys {
        let key: String?
        /// True when parts were appended to the base (the original key is then the base plus any partition).
        let hasParts: Bool

        /// The original's key: the base plus the partition part when parts were appended, else `key` itself. Made
        /// from `key`, whose first token is the escaped base, so a load keeps no copy of the base for it.
        func originalKey(url: URL, absoluteString: String, context: ImageContext) -> String? {
            guard hasParts, let key else { return key }
            return CacheKeys.originalKey(
                ofDerivedKey: key, partition: context.cachePartitionKey, url: url, absoluteString: absoluteString)
        }
    }

    /// The load's key: the filter's base, then the parts that change what the key means. `decodeOptions` nil means
    /// the standard ones (no part).
    ///
    /// `absoluteString` is consumed: without a filter it is the base, and a plain load's key is that very string
    /// (no copy, no reference count taken on the way).
    static func keys(
        for url: URL, absoluteString: consuming String, schemeEnd: Int? = nil, context: ImageContext,
        decodeOptions box: DecodeOptionsBox?
    ) -> Keys {
        let partitioned = context.hasValue(.cachePartitionKey)
        if context.hasValue(.cacheKeyFilter), let filter = context.cacheKeyFilter {
            guard let base = filter.cacheKey(for: url) else { return Keys(key: nil, hasParts: false) }
            let parts = keyParts(context: context, decodeOptions: box, partitioned: partitioned)
            let key = CacheKeys.key(
                base: base, url: url, absoluteString: absoluteString, schemeEnd: schemeEnd, parts: parts)
            return Keys(key: key, hasParts: !parts.isEmpty)
        }
        if box == nil, !partitioned, !context.hasValue(.imageCoder), !context.hasValue(.imageEncodeOptions) {
            let base = absoluteString
            // A transformer and nothing else (every load of a thumbnail service): its part is copied in as it is.
            if context.hasValue(.imageTransformer),
                let key = context.withImageTransformerKeyPart({ transformer in
                    CacheKeys.key(absoluteString: base, url: url, schemeEnd: schemeEnd, transformer: transformer)
                })
            {
                return Keys(key: key, hasParts: true)
            }
            // The common plain load: no part, so both keys are the absolute string (escaped, should it need it).
            return Keys(key: CacheKeys.key(plainBase: base), hasParts: false)
        }
        let parts = keyParts(context: context, decodeOptions: box, partitioned: partitioned)
        let key = CacheKeys.key(
            base: absoluteString, url: url, absoluteString: absoluteString, schemeEnd: schemeEnd, parts: parts)
        return Keys(key: key, hasParts: !parts.isEmpty)
    }

    /// The parts of a load's key besides its base.
    private static func keyParts(
        context: ImageContext, decodeOptions box: DecodeOptionsBox?, partitioned: Bool
    ) -> CacheKeys.Parts {
        var parts = CacheKeys.Parts()
        parts.transformer = context.imageTransformerKeyPart
        if let decodeOptions = box?.options {
            // The decode options whose declaration makes them a key part write it (``OptionTraits/KeyRule``); the
            // switch is exhaustive, so a new field decides here how it shows.
            for field in ImageDecodeOptions.Field.allCases {
                guard case .part = field.traits.key else { continue }
                switch field {
                case .thumbnailPixelSize, .preserveAspectRatio, .allowsThumbnailUpscaling:
                    if let size = decodeOptions.thumbnailPixelSize, size.width > 0, size.height > 0 {
                        parts.thumbnail = size
                        parts.fill = !decodeOptions.preserveAspectRatio
                        parts.scaleUp = decodeOptions.allowsThumbnailUpscaling
                    }
                case .applyOrientation: parts.rawOrientation = !decodeOptions.applyOrientation
                case .firstFrameOnly: parts.firstFrame = decodeOptions.firstFrameOnly
                case .coderOptions, .convertToSRGB: parts.decode = decodeOptions.keyPart
                case .maxPixelCount, .scaleDownLimitBytes, .preloadAllFrames, .scaleFactor, .animationBudget: break
                }
            }
        }
        if partitioned { parts.partition = context.cachePartitionKey }
        // A coder of the load's own decodes its own way (``ContextSlot/imageCoder``'s declaration: a key part).
        if context.hasValue(.imageCoder), let coder = context.imageCoder {
            parts.coder = String(reflecting: type(of: coder))
        }
        // Encode options decide what a derived entry reads back (``ImageEncodeOptions/Field``: a key part).
        if context.hasValue(.imageEncodeOptions), let encode = context.imageEncodeOptions {
            parts.encode = encode.keyPart
        }
        return parts
    }

    // MARK: What a cached image can serve

    /// The image this load delivers for a cached image of its key, or nil when that level cannot honour the
    /// load's options (see the key table in ARCHITECTURE.md):
    /// - a transformed key holding an animation (made with ``ImageOptions/transformAnimatedImage``) cannot serve
    ///   a load without that option, which wants the untransformed animation;
    /// - with a scale-down budget, an image over the budget cannot be served (the load decodes smaller);
    /// - first-frame-only loads get the first frame of an animation.
    func deliverable(fromCached image: Image) -> Image? {
        LoadLookup.deliverable(
            fromCached: image, transformed: transformer != nil, options: options, decodeOptions: decodeOptions)
    }

    /// True when an image decoded from the original with this load's options is what its key means, so it may be
    /// stored under the key: not shrunk by the scale-down budget, every frame of the source unless the key says
    /// first frame (an animation budget with `onExceeded: .firstFrameOnly` may keep only the first), and transformed
    /// if the key says so. (A first-frame decode is what its key means: `frames(first)` is a key part.)
    func isCanonical(decoded image: Image, sourceFrameCount: Int?, transformSkipped: Bool) -> Bool {
        if transformSkipped { return false }
        if !decodeOptions.firstFrameOnly, let frames = sourceFrameCount, image.frameCount < frames { return false }
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
    /// The request's context with the manager's transformer, filter and serializer layered under it where it names
    /// none (an explicit none counts as naming one); layering copies and allocates nothing.
    func mergedContext(_ context: ImageContext) -> ImageContext {
        context.layering(loadSettings.contextDefaults)
    }
}
