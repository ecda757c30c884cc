import Foundation

/// What a load resolves before it may touch a cache: the cache and loader, whether the request carries
/// credentials (which decides whether any cache may be read), the decode options and the keys.
///
/// A memory hit needs nothing else, so the hit path stops here; a miss builds the ``LoadPlan`` on top of it
/// (serializer, coders, store levels, download isolation). Privacy comes first: a load that carries credentials
/// without a partition key gets no key, so no level is ever asked for it.
struct LoadLookup {
    let options: ImageOptions
    /// True when the request carries credentials (a request modifier, or the loader says so).
    let carriesCredentials: Bool
    /// True when the context names a partition key.
    let isPartitioned: Bool
    /// The load's decode options when its options or context change any; nil for the standard ones, which most
    /// loads have (boxed: an inline `ImageDecodeOptions` is a large value with optionals and a dictionary, and
    /// every copy of it costs more than the rest of a memory hit's bookkeeping).
    private let customDecode: DecodeOptionsBox?
    /// The load's decode options.
    var decodeOptions: ImageDecodeOptions { customDecode?.options ?? LoadPlan.standardDecodeOptions }
    /// True when the load has a transformer.
    let isTransformed: Bool
    /// The cache key; nil when uncacheable (filter said so, or credentials without a partition).
    var key: String? { hasKey ? cacheKey : nil }
    /// True when the load has a cache key.
    let hasKey: Bool
    /// The cache key when `hasKey`, else empty. (A plain `String`: the optimizer copies a `String?` through the
    /// runtime's generic value witnesses.) Emptied by ``takeKey()`` when a memory hit ends the load.
    private(set) var cacheKey: String
    /// True when a thumbnail, orientation, transformer or partition part was appended to the base (the original
    /// key, built only on a miss, then differs from `key`).
    private let hasParts: Bool
    /// Levels to query for `key` (none when the load may not share cache entries).
    let queryCacheType: ImageCacheType

    /// The key of the untransformed original; nil when uncacheable. Built on each call: the miss path asks once.
    func originalKey(url: URL, context: ImageContext) -> String? {
        guard hasKey else { return nil }
        return LoadPlan.Keys(key: cacheKey, hasParts: hasParts)
            .originalKey(url: url, absoluteString: url.absoluteString, context: context)
    }

    /// A load that carries no credentials, or is partitioned, may read and write shared cache entries.
    var isShareable: Bool { !carriesCredentials || isPartitioned }

    // Every stored string or existential is a reference count to take and drop on every load, and the strategies
    // are existentials whose copies go through their type's value witnesses: so this type keeps what it learnt
    // from them (flags, the keys) and the plan reads the rest from the context when it needs it.
    // Inlined into its one caller, so the value is built in place rather than copied out of the initializer.
    @inline(__always)
    init(
        url: URL, absoluteString: consuming String, schemeEnd: Int?, options: ImageOptions, context: ImageContext,
        manager: ImageManager
    ) {
        // Everything into locals first, then each field assigned once: an initializer that reads a field it just
        // set builds the value in memory and copies it out, a reference count per field.
        let partitioned = context.hasValue(.cachePartitionKey)
        let credentials: Bool
        if context.hasValue(.downloadRequestModifier) {
            credentials = true
        } else if context.hasValue(.imageLoader), let loader = context.imageLoader {
            credentials = loader.requestCarriesCredentials(for: url, options: options, context: context)
        } else {
            credentials = manager.strategies.requestCarriesCredentials(for: url, options: options, context: context)
        }
        let decode =
            LoadPlan.hasStandardDecodeOptions(options: options, context: context)
            ? nil : DecodeOptionsBox(LoadPlan.decodeOptions(options: options, context: context))
        let keys: LoadPlan.Keys
        let levels: ImageCacheType
        if !credentials || partitioned {
            keys = LoadPlan.keys(
                for: url, absoluteString: absoluteString, schemeEnd: schemeEnd, context: context,
                decodeOptions: decode)
            levels = context.queryCacheType ?? .all
        } else {
            keys = LoadPlan.Keys(key: nil, hasParts: false)
            levels = .none
        }
        self.options = options
        carriesCredentials = credentials
        isPartitioned = partitioned
        customDecode = decode
        isTransformed = context.hasValue(.imageTransformer)
        hasKey = keys.key != nil
        cacheKey = keys.key ?? ""
        hasParts = keys.hasParts
        queryCacheType = levels
    }

    /// Asks the load's cache (the context's, else the manager's) for ``cacheKey`` on this thread; see
    /// ``ImageCacheProtocol/queryImageSync(forKey:options:context:cacheType:)``. (The key is read here, not passed
    /// in: an argument read from the caller's `inout` lookup is copied, a reference count each way.)
    func queryImageSync(context: ImageContext, manager: ImageManager) -> SyncCacheQueryResult {
        if context.hasValue(.imageCache), let cache = context.imageCache {
            return cache.queryImageSync(
                forKey: cacheKey, options: options, context: context, cacheType: queryCacheType)
        }
        return manager.strategies.queryImageSync(
            forKey: cacheKey, options: options, context: context, cacheType: queryCacheType)
    }

    /// The cache key, moved out (the lookup's is left empty): the key a memory hit hands to its result, without a
    /// retain for the result and a release for the lookup.
    mutating func takeKey() -> String {
        var key = ""
        swap(&key, &cacheKey)
        return key
    }

    /// True when ``deliverable(fromCached:)`` would return `image` itself: the standard decode options, and no
    /// transformed animation a load without ``ImageOptions/transformAnimatedImage`` can't use. What a memory hit
    /// asks, so it delivers the cache's reference as it is instead of a copy.
    @inline(__always)
    func deliversAsCached(_ image: Image) -> Bool {
        customDecode == nil && !(isTransformed && !options.transformsImage(animated: image.isAnimated))
    }

    /// ``deliverable(fromCached:transformed:options:decodeOptions:)`` for this load.
    func deliverable(fromCached image: Image) -> Image? {
        guard let customDecode else {
            // The standard decode options neither scale down nor take a first frame: the rule is the memory hit's.
            return deliversAsCached(image) ? image : nil
        }
        return Self.deliverable(
            fromCached: image, transformed: isTransformed, options: options, decodeOptions: customDecode.options)
    }

    /// The image a load delivers for a cached image of its key, or nil when that level cannot honour the load's
    /// options (see the key table in ARCHITECTURE.md):
    /// - a transformed key holding an animation (made with ``ImageOptions/transformAnimatedImage``) cannot serve
    ///   a load without that option, which wants the untransformed animation;
    /// - with a scale-down budget, an image over the budget cannot be served (the load decodes smaller);
    /// - first-frame-only loads get the first frame of an animation, and so do loads whose animation budget keeps
    ///   the first frame of an animation over it (`onExceeded: .firstFrameOnly`), as their decode would.
    static func deliverable(
        fromCached image: Image, transformed: Bool, options: ImageOptions, decodeOptions: ImageDecodeOptions
    ) -> Image? {
        if transformed, !options.transformsImage(animated: image.isAnimated) { return nil }
        if let limit = decodeOptions.scaleDownLimitBytes, limit > 0 {
            let (pixels, overflow) = image.width.multipliedReportingOverflow(by: image.height)
            if overflow || pixels > limit / 4 { return nil }
        }
        return decodeOptions.keepsFirstFrameOnly(of: image) ? image.with(frames: [image.frames[0]]) : image
    }
}

extension ImageDecodeOptions {
    /// True when a load with these options gets only the first frame of `image`, already decoded: asked for
    /// (``firstFrameOnly``), or kept by an animation budget over which the first frame is kept
    /// (`onExceeded: .firstFrameOnly`), as a decode with these options would. Every path that serves an image
    /// decoded elsewhere (a cache hit of the key, the decoded original) asks this one rule.
    func keepsFirstFrameOnly(of image: Image) -> Bool { keepsFirstFrameOnly(frameCount: image.frameCount) }

    /// The same rule for a source of `frameCount` frames not decoded yet: what a preview asks of the final image
    /// its load will get (a first-frame-only load's final image is a still image, transformed as one).
    func keepsFirstFrameOnly(frameCount: Int) -> Bool {
        guard frameCount > 1 else { return false }
        if firstFrameOnly { return true }
        return frameCount > animationBudget.maxFrameCount && animationBudget.onExceeded == .firstFrameOnly
    }
}

/// Decode options kept by reference (see ``LoadLookup``).
final class DecodeOptionsBox: Sendable {
    let options: ImageDecodeOptions
    init(_ options: ImageDecodeOptions) { self.options = options }
}

extension ImageOptions {
    /// True when a load with these options runs its transformer on an image that is (or, for a preview, whose
    /// final image will be) `animated`: a still image always, an animation only with
    /// ``ImageOptions/transformAnimatedImage``. The one rule of the final image, its previews and the cache levels.
    func transformsImage(animated: Bool) -> Bool { !animated || contains(.transformAnimatedImage) }
}
