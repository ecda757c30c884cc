import Foundation
import ImageTestSupport
import WebImage

/// The plain reference every load is checked against: fetch, decode, transform — no cache, no coalescing, no
/// shared state. A load's result must be what a fresh decode of bytes the origin served gives with the load's
/// options (its coder, its decode options, its transformer), or a failure that decode (or the program) explains.
final class ModelReference: Sendable {
    /// What the reference reaches for one version's bytes.
    enum Expected: Hashable, CustomStringConvertible {
        case image(Signature)
        case failure(ImageError.Code)

        var description: String {
            switch self {
            case .image(let signature): "\(signature)"
            case .failure(let code): "fails \(code)"
            }
        }
    }

    let world: ModelWorld
    private let memo = Locked<[String: (Expected, Image?)]>([:])

    init(world: ModelWorld) { self.world = world }

    /// The coder a load decodes with: the one its context names, else a registry of the manager's coders.
    func coder(for spec: LoadSpec) -> any ImageCoder { spec.context.imageCoder ?? world.referenceCoders }

    /// What makes two loads' references equal: the bytes, the coder, the decode options, the transform.
    func referenceKey(_ spec: LoadSpec, partition: String?, version: Int, truncated: Bool) -> String {
        let coder = spec.context.imageCoder.map { "\(type(of: $0))" } ?? "registry"
        let transform = spec.context.imageTransformer.map {
            $0.transformerKey + (spec.options.contains(.transformAnimatedImage) ? "+animated" : "")
        }
        return
            "\(spec.url.absoluteString) \(partition ?? "-") v\(version)\(truncated ? "-cut" : "") \(coder) "
            + "\(spec.decodeOptions) \(transform ?? "-")"
    }

    /// The reference for `spec` on the bytes the origin serves at `version` (for the load's partition unless given).
    func expected(_ spec: LoadSpec, version: Int, partition: String?? = .none) -> Expected {
        reference(spec, version: version, partition: partition ?? spec.partition).0
    }

    private func reference(_ spec: LoadSpec, version: Int, partition: String?, truncated: Bool = false)
        -> (Expected, Image?)
    {
        let key = referenceKey(spec, partition: partition, version: version, truncated: truncated)
        if let known = memo.withLock({ $0[key] }) { return known }
        let bytes = world.origin.body(
            of: ModelOrigin.Served(
                url: spec.url.absoluteString, partition: partition, version: version, truncated: truncated))
        let result: (Expected, Image?)
        do {
            var image = try CodersManager.decode(bytes, with: coder(for: spec), options: spec.decodeOptions)
            if let transformer = spec.context.imageTransformer,
                !image.isAnimated || spec.options.contains(.transformAnimatedImage)
            {
                image = try transformer.transform(image, forKey: "")
            }
            result = (.image(Signature(image)), image)
        } catch {
            result = (.failure((error as? ImageError)?.code ?? .badImageData), nil)
        }
        memo.withLock { $0[key] = result }
        return result
    }

    /// Whether the model accepts, for a load whose pixel options all declare `appliesToDecodedImage`, the image the
    /// manager makes from the original decoded with the default options (first frame taken, pixels area-resampled
    /// to the thumbnail) where it differs from a fresh decode with the load's options. It differs for JPEG
    /// thumbnails: the coder decodes at a DCT scale first (reported to the lead, issue 32: the same key, other
    /// pixels, depending on whether the original was in memory). False makes the model strict about it.
    static let acceptsResampledOriginal = true

    /// The images a success of `spec` may deliver, with the version each is of: the reference on every version the
    /// origin served to the load's partition; from a cache, also what the default serializer's encoding of such an
    /// image decodes to under encode options a load of this URL set (a derived key's disk entry is that encoding,
    /// as `DefaultCacheSerializer` documents); from a cache, the image without the load's own budgets
    /// (``unbudgeted(_:)``); and, while
    /// ``acceptsResampledOriginal``, the image made from a decoded original.
    func acceptable(_ spec: LoadSpec, cacheType: ImageCacheType) -> [Signature: Int] {
        var images: [Signature: Int] = [:]
        let bodies = world.origin.served.filter {
            $0.url == spec.url.absoluteString && $0.partition == spec.partition
        }
        var variants = [spec]
        if cacheType != .none, let unbudgeted = unbudgeted(spec) { variants.append(unbudgeted) }
        // The scale-down budget is not in the key: a cached image of the key stored by a load without it serves
        // this load when it fits the budget (``unscaled(_:)``).
        let unscaled = cacheType != .none ? unscaled(spec) : nil
        if let unscaled { variants.append(unscaled.spec) }
        for body in bodies {
            for (index, variant) in variants.enumerated() {
                let (expected, image) = reference(
                    variant, version: body.version, partition: spec.partition, truncated: body.truncated)
                guard case .image(let signature) = expected else { continue }
                let limit = unscaled != nil && index == variants.count - 1 ? unscaled!.maxPixels : Int.max
                let fits = { (signature: Signature) in signature.width * signature.height <= limit }
                if fits(signature) { images[signature] = body.version }
                if body.truncated { fromTruncated.withLock { _ = $0.insert(signature) } }
                guard cacheType != .none, let image else { continue }
                for encode in world.encodesUsed(url: spec.url, partition: spec.partition) {
                    if let encoded = encoded(image, with: encode, spec: spec), fits(encoded) {
                        images[encoded] = body.version
                    }
                }
            }
            if Self.acceptsResampledOriginal, let (resampled, image) = fromDecodedOriginal(spec, body: body),
                images[resampled] == nil
            {
                images[resampled] = body.version
                // How far it is from the fresh decode: the largest difference of a sample, straight RGBA.
                let fresh = reference(spec, version: body.version, partition: spec.partition, truncated: body.truncated)
                var deviation = -1
                if let freshImage = fresh.1, freshImage.width == image.width, freshImage.height == image.height {
                    let mine = image.pixels.straightRGBABytes()
                    let theirs = freshImage.pixels.straightRGBABytes()
                    deviation = zip(mine, theirs).map { abs(Int($0) - Int($1)) }.max() ?? 0
                }
                resampledOnly.withLock { $0[resampled] = deviation }
            }
        }
        return images
    }

    /// Images that only the decoded-original path gives, each with its largest sample difference from the fresh
    /// decode (-1: another size), and images decoded from a truncated body (counted by the model's coverage).
    let resampledOnly = Locked<[Signature: Int]>([:])
    let fromTruncated = Locked<Set<Signature>>([])

    /// The manager's other way to a load's image: the original decoded with the default options, then the steps
    /// that work on pixels (first frame — asked for, or kept by an animation budget over which the first frame is
    /// kept —, the area resampling to the thumbnail or scale-down size, the upscaled budget), then the transform;
    /// nil when an option of the load acts inside the decoder.
    func fromDecodedOriginal(_ spec: LoadSpec, body: ModelOrigin.Served) -> (Signature, Image)? {
        let options = spec.decodeOptions
        guard !options.convertToSRGB, options.applyOrientation, options.coderOptions.isEmpty,
            spec.context.imageCoder == nil
        else { return nil }
        let bytes = world.origin.body(of: body)
        guard var image = try? CodersManager.decode(bytes, with: world.referenceCoders, options: ImageDecodeOptions())
        else { return nil }
        // An animation serves only a load that takes it at full size.
        if image.isAnimated, options.thumbnailPixelSize != nil || options.scaleDownLimitBytes != nil { return nil }
        let budget = options.animationBudget
        if image.frameCount > budget.maxFrameCount, budget.onExceeded == .fail { return nil }
        let overBudget = image.frameCount > budget.maxFrameCount && budget.onExceeded == .firstFrameOnly
        if options.firstFrameOnly || overBudget, image.isAnimated { image = image.with(frames: [image.frames[0]]) }
        let target = options.targetSize(forSourceWidth: image.width, height: image.height)
        if !image.isAnimated, target.width != image.width || target.height != image.height {
            if target.width > image.width || target.height > image.height {
                guard (try? options.checkUpscaledBudget(target)) != nil else { return nil }
            }
            image = Image(
                pixels: image.pixels.areaResampled(width: target.width, height: target.height), format: image.format,
                metadata: image.metadata)
        }
        if let transformer = spec.context.imageTransformer,
            !image.isAnimated || spec.options.contains(.transformAnimatedImage)
        {
            guard let transformed = try? transformer.transform(image, forKey: "") else { return nil }
            image = transformed
        }
        return (Signature(image), image)
    }

    /// What `image` reads back as after the default serializer wrote it with `options`.
    private func encoded(_ image: Image, with options: ImageEncodeOptions, spec: LoadSpec) -> Signature? {
        let coder = coder(for: spec)
        guard
            let data = DefaultCacheSerializer(coder: coder, options: options).cacheData(
                for: image, originalData: nil, imageURL: nil),
            let decoded = try? CodersManager.decode(data, with: coder, options: ImageDecodeOptions())
        else { return nil }
        return Signature(decoded)
    }

    /// The load without its own budgets — the pixel budget, and an animation budget that fails when exceeded: a
    /// budget only refuses, and a cached image of the key is served whatever its source's size or frame count (then
    /// meeting the rest of the load's steps).
    func unbudgeted(_ spec: LoadSpec) -> LoadSpec? {
        var decode = spec.context.imageDecodeOptions ?? ImageDecodeOptions()
        let options = spec.decodeOptions
        let pixelBudget = options.maxPixelCount != ImageDecodeOptions.defaultMaxPixelCount
        let frameBudget = options.animationBudget != .default && options.animationBudget.onExceeded == .fail
        guard pixelBudget || frameBudget else { return nil }
        decode.maxPixelCount = ImageDecodeOptions.defaultMaxPixelCount
        if frameBudget { decode.animationBudget = .default }
        var unbudgeted = spec
        unbudgeted.context.imageDecodeOptions = decode
        return unbudgeted
    }

    /// The load without its scale-down budget, and the most pixels a cached image may have to serve it (the
    /// manager's rule: a quarter of the budget's bytes); nil when the load has no scale-down budget.
    func unscaled(_ spec: LoadSpec) -> (spec: LoadSpec, maxPixels: Int)? {
        guard let limit = spec.decodeOptions.scaleDownLimitBytes, limit > 0 else { return nil }
        var unscaled = spec
        unscaled.options.remove(.scaleDownLargeImages)
        if var decode = unscaled.context.imageDecodeOptions {
            decode.scaleDownLimitBytes = nil
            unscaled.context.imageDecodeOptions = decode
        }
        return (unscaled, limit / 4)
    }

    /// The failures the reference reaches on any version of the URL the origin has had (a failure of the bytes
    /// themselves: too large for the load's budget, not decodable by its coder, a transform that refuses them) —
    /// with the load's budget, and without it.
    func failureCodes(_ spec: LoadSpec) -> Set<ImageError.Code> {
        var codes: Set<ImageError.Code> = []
        for variant in [spec] + (unbudgeted(spec).map { [$0] } ?? []) {
            for version in 0...world.origin.version(of: spec.url) {
                if case .failure(let code) = expected(variant, version: version) { codes.insert(code) }
            }
        }
        return codes
    }
}
