import Foundation
import ImageTestSupport
import WebImage

/// How the model draws every entry of ``OptionCatalog/all``: for each, a random use away from its default (a
/// flag set, a key holding a value, a stored option changed, a control used). The model enumerates the catalog,
/// so a new option, key or control without a draw here fails `everyCatalogEntryHasADraw` — it enters the model or
/// fails CI.
enum OptionDraws {
    /// Changes one load's spec.
    typealias Draw = @Sendable (inout LoadSpec, inout SplitMix64, ModelWorld) -> Void

    /// The catalog, with the plugin keys the model's loads can carry declared first (a plugin key enters the
    /// catalog when its declaring `static let` runs).
    static var catalog: [OptionCatalog.Entry] {
        _ = ImageContextOption.httpTransferTimeout
        _ = ModelOrigin.deadline
        _ = ModelOrigin.cookieDeadline
        return OptionCatalog.all
    }

    /// The controls a program uses on a whole wave (the others are drawn per load, as options are).
    static let waveControls: [LoadControl] = [
        .cancelAllLoads, .cancelAllDownloads, .cancelDownloadsForURL, .memoryLimits, .diskLimits,
        .downloadsAheadOfDecoding, .removeFailedURLs, .cacheHitPromotion,
    ]

    /// The catalog entries drawn per load.
    static var loadEntries: [OptionCatalog.Entry] {
        catalog.filter { entry in
            entry.kind != .control || !waveControls.map(\.rawValue).contains(entry.name)
        }
    }

    /// The entries of the catalog that have no draw.
    static var missing: [OptionCatalog.Entry] {
        catalog.filter { entry in
            if entry.kind == .control, waveControls.contains(where: { $0.rawValue == entry.name }) { return false }
            return draws[entry.id] == nil
        }
    }

    /// Draws `count` distinct entries for `spec`.
    static func draw(_ count: Int, into spec: inout LoadSpec, _ random: inout SplitMix64, world: ModelWorld) {
        let entries = loadEntries
        for _ in 0..<count {
            let entry = entries.randomElement(using: &random)!
            guard !spec.drawn.contains(entry.id), let draw = draws[entry.id] else { continue }
            spec.drawn.append(entry.id)
            draw(&spec, &random, world)
        }
    }

    // MARK: The draws

    static let thumbnails = [
        PixelSize(width: 10, height: 10), PixelSize(width: 16, height: 8), PixelSize(width: 24, height: 24),
        PixelSize(width: 48, height: 40),
    ]
    static let tenants = ["tenant-1", "tenant 2"]

    static func transformers() -> [any Transformer] {
        [
            CompoundingTransformer(.grow(2)), CompoundingTransformer(.invert), FlipTransformer(horizontal: true),
            // Fails (`transformFailed`) on images narrower than 46 pixels: a transform failure the origin decides.
            CropTransformer(x: 45, y: 0, width: 10, height: 10),
        ]
    }

    static func pick<T>(_ values: [T], _ random: inout SplitMix64) -> T { values.randomElement(using: &random)! }

    static func note(_ spec: inout LoadSpec, _ text: String) { spec.notes.append(text) }

    static func flag(_ flag: ImageOptions.Flag, extra: Draw? = nil) -> (String, Draw) {
        (
            "flag \(flag)",
            { spec, random, world in
                spec.options.insert(ImageOptions(flag))
                note(&spec, "\(flag)")
                extra?(&spec, &random, world)
            }
        )
    }

    static func key(_ name: String, _ draw: @escaping Draw) -> (String, Draw) { ("contextKey \(name)", draw) }

    static func decodeField(
        _ field: ImageDecodeOptions.Field,
        _ change: @escaping @Sendable (inout ImageDecodeOptions, inout SplitMix64) -> String
    )
        -> (String, Draw)
    {
        (
            "decodeOption \(field)",
            { spec, random, _ in
                var decode = spec.decode ?? ImageDecodeOptions()
                note(&spec, "decode.\(change(&decode, &random))")
                spec.decode = decode
            }
        )
    }

    static func encodeField(
        _ field: ImageEncodeOptions.Field,
        _ change: @escaping @Sendable (inout ImageEncodeOptions, inout SplitMix64) -> String
    )
        -> (String, Draw)
    {
        (
            "encodeOption \(field)",
            { spec, random, _ in
                var encode = spec.encode ?? ImageEncodeOptions()
                note(&spec, "encode.\(change(&encode, &random))")
                spec.encode = encode
            }
        )
    }

    /// A load through an `ImageTarget` (the flags that only a target reads).
    static let throughTarget: Draw = { spec, random, _ in
        if spec.target == nil { spec.target = (Int.random(in: 0..<2, using: &random), nil) }
    }

    static let withTransformer: Draw = { spec, random, _ in
        if spec.context.imageTransformer == nil { spec.context.imageTransformer = pick(transformers(), &random) }
    }

    static let withThumbnail: Draw = { spec, random, _ in
        if spec.context.imageThumbnailPixelSize == nil, spec.decode?.thumbnailPixelSize == nil {
            spec.context.imageThumbnailPixelSize = pick(thumbnails, &random)
        }
    }

    static let draws: [String: Draw] = Dictionary(
        uniqueKeysWithValues: flagDraws + keyDraws + decodeDraws + encodeDraws + controlDraws)

    static let flagDraws: [(String, Draw)] = [
        flag(.retryFailed), flag(.lowPriority), flag(.highPriority), flag(.progressiveLoad), flag(.refreshCached),
        flag(.handleCookies), flag(.allowInvalidSSLCertificates), flag(.delayPlaceholder, extra: throughTarget),
        flag(.avoidAutoSetImage, extra: throughTarget), flag(.transformAnimatedImage, extra: withTransformer),
        flag(.scaleDownLargeImages), flag(.queryMemoryData), flag(.queryMemoryDataSync), flag(.queryDiskDataSync),
        flag(.fromCacheOnly), flag(.fromLoaderOnly), flag(.decodeFirstFrameOnly), flag(.preloadAllFrames),
        flag(.waitStoreCache), flag(.avoidAutoCancelImage, extra: throughTarget), flag(.refreshStale),
    ]

    static let keyDraws: [(String, Draw)] = [
        key("imageCache") { spec, _, world in
            spec.context.imageCache = world.sideCache
            note(&spec, "own cache")
        },
        key("imageLoader") { spec, _, world in
            spec.context.imageLoader = world.ownLoader
            note(&spec, "own loader")
        },
        key("imageCoder") { spec, _, _ in
            // The coder of the URL's format (a coder that can't decode the bytes is a misuse: the key doesn't hold
            // the coder, so a cached image would serve it).
            switch spec.url.pathExtension {
            case "timg": spec.context.imageCoder = TestCoder()
            case "jpg": spec.context.imageCoder = JPEGCoder.shared
            default: spec.context.imageCoder = PNGCoder.shared
            }
            note(&spec, "coder \(spec.url.pathExtension)")
        },
        key("imageTransformer") { spec, random, _ in
            let transformer = pick(transformers(), &random)
            spec.context.imageTransformer = transformer
            note(&spec, "transform \(transformer.transformerKey)")
        },
        key("cacheKeyFilter") { spec, random, _ in
            let uncacheable = Double.random(in: 0..<1, using: &random) < 0.2
            spec.context.cacheKeyFilter = BlockCacheKeyFilter { url in
                uncacheable ? nil : "filtered " + url.absoluteString
            }
            note(&spec, uncacheable ? "filter nil" : "filter")
        },
        key("cacheSerializer") { spec, random, world in
            let png = Bool.random(using: &random)
            spec.context.cacheSerializer = png ? world.pngSerializer : world.nilSerializer
            note(&spec, png ? "serializer png" : "serializer nil")
        },
        key("callbackQueue") { spec, _, world in
            spec.context.callbackQueue = .dispatch(world.callbackQueue)
            note(&spec, "callback queue")
        },
        key("imageScaleFactor") { spec, random, _ in
            spec.context.imageScaleFactor = pick([2.0, 3.0], &random)
            note(&spec, "scale \(spec.context.imageScaleFactor ?? 1)")
        },
        key("imagePreserveAspectRatio") { spec, random, world in
            withThumbnail(&spec, &random, world)
            spec.context.imagePreserveAspectRatio = false
            note(&spec, "fill \(spec.context.imageThumbnailPixelSize.map { "\($0)" } ?? "")")
        },
        key("imageThumbnailPixelSize") { spec, random, _ in
            spec.context.imageThumbnailPixelSize = pick(thumbnails, &random)
            note(&spec, "thumb \(spec.context.imageThumbnailPixelSize!)")
        },
        key("imageScaleDownLimitBytes") { spec, random, _ in
            spec.context.imageScaleDownLimitBytes = pick([1200, 4000], &random)
            if Bool.random(using: &random) { spec.options.insert(.scaleDownLargeImages) }
            note(&spec, "scale-down limit \(spec.context.imageScaleDownLimitBytes!)")
        },
        key("imageDecodeOptions") { spec, random, world in
            if spec.decode == nil {
                let (id, draw) = decodeDraws.randomElement(using: &random)!
                spec.drawn.append(id)
                draw(&spec, &random, world)
            }
        },
        key("imageEncodeOptions") { spec, random, world in
            if spec.encode == nil {
                let (id, draw) = encodeDraws.randomElement(using: &random)!
                spec.drawn.append(id)
                draw(&spec, &random, world)
            }
        },
        key("queryCacheType") { spec, random, _ in
            spec.context.queryCacheType = pick([ImageCacheType(), .memory, .disk], &random)
            note(&spec, "query \(spec.context.queryCacheType!)")
        },
        key("storeCacheType") { spec, random, _ in
            spec.context.storeCacheType = pick([ImageCacheType(), .memory, .disk], &random)
            note(&spec, "store \(spec.context.storeCacheType!)")
        },
        key("originalQueryCacheType") { spec, random, _ in
            spec.context.originalQueryCacheType = pick([ImageCacheType(), .memory, .disk], &random)
            note(&spec, "original query \(spec.context.originalQueryCacheType!)")
        },
        key("originalStoreCacheType") { spec, random, _ in
            spec.context.originalStoreCacheType = pick([ImageCacheType(), .memory, .all], &random)
            note(&spec, "original store \(spec.context.originalStoreCacheType!)")
        },
        key("originalImageCache") { spec, _, world in
            spec.context.originalImageCache = world.sideOriginalCache
            note(&spec, "own original cache")
        },
        key("downloadRequestModifier") { spec, _, _ in
            spec.context.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request.url = URL(string: request.url.absoluteString + "?via=modifier") ?? request.url
                request.headers.append((name: "x-model", value: "1"))
                return request
            }
            note(&spec, "request modifier")
        },
        key("downloadResponseModifier") { spec, _, _ in
            spec.context.downloadResponseModifier = BlockResponseModifier { response in
                var response = response
                response.headers["x-model"] = "1"
                return response
            }
            note(&spec, "response modifier")
        },
        key("downloadDecryptor") { spec, _, _ in
            spec.context.downloadDecryptor = BlockDownloadDecryptor { data, _ in
                Data(data.map { $0 ^ ModelOrigin.encryptionMask })
            }
            note(&spec, "decryptor")
        },
        key("loaderCachedImage") { spec, _, _ in
            spec.context.loaderCachedImage = ModelTarget.placeholder
            note(&spec, "loader cached image")
        },
        key("loaderCachedMetadata") { spec, random, world in
            // The ETag the origin serves now (it answers 304), or an older one.
            let current = Bool.random(using: &random)
            let version = world.origin.version(of: spec.url) - (current ? 0 : 1)
            spec.context.loaderCachedMetadata = CacheEntryMetadata(
                etag: ModelOrigin.etag(version: version, partition: spec.partition))
            note(&spec, "validator v\(version)")
        },
        key("setImageOperationKey") { spec, random, _ in
            let name = pick(["k1", "k2"], &random)
            spec.context.setImageOperationKey = name
            spec.target = (spec.target?.index ?? Int.random(in: 0..<2, using: &random), name)
            note(&spec, "operation key \(name)")
        },
        key("downloadHeaderCheck") { spec, _, _ in
            spec.context.downloadHeaderCheck = DownloadHeaderCheck { _ in .accept }
            note(&spec, "header check")
        },
        key("cachePartitionKey") { spec, random, _ in
            spec.context.cachePartitionKey = pick(tenants, &random)
            note(&spec, "partition \(spec.partition!)")
        },
        key("loadTimeout") { spec, random, _ in
            // Shorter than a slow answer (0.15 s), about one, and longer than a wave's loads take.
            spec.context.loadTimeout = pick([0.05, 0.2, 3.0], &random)
            note(&spec, "load timeout \(spec.context.loadTimeout!)")
        },
        key(ModelOrigin.deadline.rawValue) { spec, random, _ in
            spec.context[ModelOrigin.deadline] = pick([0.05, 0.5], &random)
            note(&spec, "deadline \(spec.deadline!)")
        },
        // Declared to act only with `.handleCookies`: drawn with and without the flag, so the model sees the key
        // share a download when it is inactive and isolate one when it acts.
        key(ModelOrigin.cookieDeadline.rawValue) { spec, random, _ in
            spec.context[ModelOrigin.cookieDeadline] = pick([0.05, 0.5], &random)
            if Bool.random(using: &random) { spec.options.insert(.handleCookies) }
            let acts = spec.options.contains(.handleCookies)
            note(&spec, "cookie deadline \(spec.context[ModelOrigin.cookieDeadline]!)\(acts ? "" : " (inactive)")")
        },
        key(ImageContextOption.httpTransferTimeout.rawValue) { spec, random, _ in
            spec.context.httpTransferTimeout = pick([1.0, 5.0], &random)
            note(&spec, "http timeout \(spec.context.httpTransferTimeout!)")
        },
    ]

    static let decodeDraws: [(String, Draw)] = [
        decodeField(.maxPixelCount) { options, random in
            options.maxPixelCount = pick([400, 1500, 100_000], &random)
            return "budget \(options.maxPixelCount)"
        },
        decodeField(.thumbnailPixelSize) { options, random in
            options.thumbnailPixelSize = pick(thumbnails, &random)
            return "thumb \(options.thumbnailPixelSize!)"
        },
        decodeField(.preserveAspectRatio) { options, random in
            options.preserveAspectRatio = false
            if options.thumbnailPixelSize == nil { options.thumbnailPixelSize = pick(thumbnails, &random) }
            return "fill \(options.thumbnailPixelSize!)"
        },
        decodeField(.allowsThumbnailUpscaling) { options, random in
            // Scaled up within the budget, or past it: a 120×120 box over a budget of 10,000 pixels (small, so a
            // scale-down limit that brings it back under the budget leaves a cheap decode).
            options.allowsThumbnailUpscaling = true
            if Bool.random(using: &random) {
                options.thumbnailPixelSize = PixelSize(width: 80, height: 80)
            } else {
                options.thumbnailPixelSize = PixelSize(width: 120, height: 120)
                options.maxPixelCount = min(options.maxPixelCount, 10_000)
            }
            return "upscale \(options.thumbnailPixelSize!) budget \(options.maxPixelCount)"
        },
        decodeField(.scaleDownLimitBytes) { options, random in
            options.scaleDownLimitBytes = pick([1200, 4000], &random)
            return "scale-down \(options.scaleDownLimitBytes!)"
        },
        decodeField(.firstFrameOnly) { options, _ in
            options.firstFrameOnly = true
            return "first frame"
        },
        decodeField(.preloadAllFrames) { options, _ in
            options.preloadAllFrames = true
            return "preload"
        },
        decodeField(.applyOrientation) { options, _ in
            options.applyOrientation = false
            return "raw orientation"
        },
        decodeField(.scaleFactor) { options, random in
            options.scaleFactor = pick([2.0, 3.0], &random)
            return "scale \(options.scaleFactor)"
        },
        decodeField(.animationBudget) { options, random in
            options.animationBudget = AnimationBudget(
                maxFrameCount: 2, onExceeded: pick([.fail, .firstFrameOnly], &random))
            return "animation budget \(options.animationBudget.onExceeded)"
        },
        decodeField(.coderOptions) { options, random in
            options.coderOptions[TestCoder.Tint.self] = pick([0x0F, 0xF0], &random)
            return "tint \(options.coderOptions[TestCoder.Tint.self]!)"
        },
        decodeField(.convertToSRGB) { options, _ in
            options.convertToSRGB = true
            return "sRGB"
        },
    ]

    static let encodeDraws: [(String, Draw)] = [
        encodeField(.quality) { options, random in
            options.quality = pick([0.3, 0.95], &random)
            return "quality \(options.quality)"
        },
        encodeField(.effort) { options, random in
            options.effort = pick([.fast, .best], &random)
            return "effort \(options.effort)"
        },
        encodeField(.lossless) { options, _ in
            options.lossless = true
            return "lossless"
        },
        encodeField(.progressive) { options, _ in
            options.progressive = true
            return "progressive"
        },
        encodeField(.chromaSubsampling) { options, random in
            options.chromaSubsampling = pick([.s444, .s420, .gray], &random)
            return "chroma \(options.chromaSubsampling!)"
        },
        encodeField(.maxPixelSize) { options, _ in
            options.maxPixelSize = PixelSize(width: 16, height: 16)
            return "max 16x16"
        },
        encodeField(.maxFileSize) { options, _ in
            options.maxFileSize = 600
            return "max 600 B"
        },
        encodeField(.firstFrameOnly) { options, _ in
            options.firstFrameOnly = true
            return "first frame"
        },
        encodeField(.perceptualTarget) { options, random in
            options.perceptualTarget = PerceptualTarget(maxDistance: pick([1.0, 3.0], &random), maxEncodes: 2)
            return "perceptual \(options.perceptualTarget!.maxDistance)"
        },
        encodeField(.backgroundColor) { options, _ in
            options.backgroundColor = .black
            return "background black"
        },
        encodeField(.coderOptions) { options, random in
            options.coderOptions[TestCoder.Tint.self] = pick([0x0F, 0xF0], &random)
            return "coder option"
        },
    ]

    static let controlDraws: [(String, Draw)] = [
        (
            "control \(LoadControl.cancelLoad)",
            { spec, random, _ in
                spec.cancelAfter = Double.random(in: 0...0.02, using: &random)
            }
        ),
        (
            "control \(LoadControl.priority)",
            { spec, random, _ in
                spec.priorityChange = (
                    Double.random(in: 0...0.01, using: &random), pick([.low, .normal, .high], &random)
                )
            }
        ),
    ]
}
