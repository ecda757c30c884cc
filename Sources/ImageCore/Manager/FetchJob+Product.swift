import Foundation

// The decode and product steps. Each follows from what the source holds (see `FetchSource`), never from who
// asked: original bytes are decoded with the load's options and transformed; a derived key's own entry is
// decoded at full size and never transformed again.
extension FetchJob {
    // MARK: Decode

    func decode(_ key: DecodeKey, _ source: FetchSource, _ info: FetchSubscriber) {
        releaseDownload()
        switch source.content {
        case .originalImage(let image, _):
            do {
                let applied = try ColorConversion.apply(
                    to: Self.applyDecodeOptions(key.options, to: image), options: key.options)
                let decoded = DecodedImage(image: applied, sourceFrameCount: image.frameCount)
                event { $0.machine.decodeFinished(key, decoded) }
            } catch {
                event { $0.machine.decodeFailed(key, error) }
            }
        case .originalBytes(let data), .productBytes(let data):
            do {
                guard !data.isEmpty else { throw ImageError(.badImageData, stage: .decode, message: "empty data") }
                let (image, properties) = try CodersManager.decodeReportingProperties(
                    data, with: info.plan.decoder, options: key.options)
                // A cached entry cut short (stored before cut bytes were recognised, or by a manager that keeps
                // them) is healed like an undecodable one: removed, and fetched again.
                if image.metadata.isIncomplete, source.origin.isCache, !info.plan.storesIncompleteImages {
                    throw ImageError(.badImageData, stage: .decode, message: "the cached bytes end before the image")
                }
                let decoded = DecodedImage(image: image, sourceFrameCount: properties?.frameCount)
                event { $0.machine.decodeFinished(key, decoded) }
            } catch {
                let imageError = ImageError.wrap(error, as: .badImageData, stage: .decode)
                if case .download = source.origin { manager.recordFailure(imageError, plan: info.plan) }
                event { state in
                    if state.failure == nil { state.failure = imageError }
                    return state.machine.decodeFailed(key, imageError)
                }
            }
        }
    }

    /// An image that is already decoded (a loader's own, or the original's memory entry) gets the decode options
    /// that can be applied to pixels: first frame only (asked for, or kept by the animation budget), and the
    /// thumbnail size of a still image (scaled up, too, with `allowsThumbnailUpscaling`, within the pixel budget).
    private static func applyDecodeOptions(_ options: ImageDecodeOptions, to image: Image) throws(ImageError) -> Image {
        var image = image
        if options.keepsFirstFrameOnly(of: image) { image = image.with(frames: [image.frames[0]]) }
        let target = options.targetSize(forSourceWidth: image.width, height: image.height)
        if !image.isAnimated, target.width != image.width || target.height != image.height {
            if target.width > image.width || target.height > image.height { try options.checkUpscaledBudget(target) }
            var metadata = image.metadata
            metadata.sourcePixelWidth = metadata.sourcePixelWidth ?? image.width
            metadata.sourcePixelHeight = metadata.sourcePixelHeight ?? image.height
            let pixels = image.pixels.areaResampled(width: target.width, height: target.height)
            image = Image(pixels: pixels, format: image.format, metadata: metadata)
        }
        return image
    }

    // MARK: Product

    func produce(_ key: ProductKey, decoded: DecodedImage, source: FetchSource, info: FetchSubscriber) {
        let plan = info.plan
        let product: FetchProduct
        switch source.content {
        case .productBytes(let data):
            // A derived key's own entry is a finished product: serve what this load can use of it, promote it.
            guard let image = plan.deliverable(fromCached: decoded.image) else {
                return event {
                    $0.machine.productFailed(key, ImageError(.unusableCacheEntry, stage: .cacheQuery))
                }
            }
            product = FetchProduct(
                image: image, data: image === decoded.image ? data : nil, canonical: decoded.image)
        case .originalBytes, .originalImage:
            var image = decoded.image
            var transformSkipped = false
            if let transformer = plan.transformer {
                if !plan.options.transformsImage(animated: image.isAnimated) {
                    transformSkipped = true
                } else {
                    do {
                        let output = try transformer.transform(
                            image, forKey: plan.originalKey ?? plan.url.absoluteString)
                        var metadata = output.metadata
                        metadata.isTransformed = true
                        image = output.with(metadata: metadata)
                    } catch {
                        let wrapped = ImageError(
                            .transformFailed, stage: .transform, message: transformer.transformerKey,
                            underlying: SendableErrorBox(error))
                        // Decided: this process will not store the key (others fetch it themselves, not wait).
                        return event { state in
                            if let cacheKey = plan.key { state.decidedKeys.insert(cacheKey) }
                            if case .download = source.origin, let originalKey = plan.originalKey {
                                state.decidedKeys.insert(originalKey)
                            }
                            return state.machine.productFailed(key, wrapped)
                        }
                    }
                }
            }
            // Cut-short bytes: delivered as decoded, marked, and kept nowhere (the key means the whole image).
            let incomplete = decoded.image.metadata.isIncomplete && !plan.storesIncompleteImages
            let canonical =
                !incomplete
                && plan.isCanonical(
                    decoded: decoded.image, sourceFrameCount: decoded.sourceFrameCount,
                    transformSkipped: transformSkipped)
            // A plain key's canonical image is exactly the decode of the original bytes; so is the first frame of a
            // still source when nothing else changed it (the decode observed one frame).
            let firstFrameOfStill = plan.isDerivedOnlyByFirstFrame && decoded.sourceFrameCount == 1
            let exactBytes = canonical && plan.transformer == nil && (!plan.isDerived || firstFrameOfStill)
            product = FetchProduct(
                image: image, data: exactBytes ? source.originalData : nil, canonical: canonical ? image : nil,
                keepsNothing: incomplete)
        }
        // The store may finish before or after the product is marked ready; both events run under the lock, so a
        // load waiting for the store (`.waitStoreCache`) is delivered exactly when both happened. The job settles
        // (ends its cache misses) only after the store, so a fleet lease ends after the entry is written.
        state.withLock { state in
            state.pendingStores += 1
            // Cut-short bytes decide nothing: the origin may serve the whole image next time (the misses end
            // `abandoned`, so a waiting replica fetches it).
            guard !product.keepsNothing else { return }
            if let cacheKey = plan.key { state.decidedKeys.insert(cacheKey) }
            // A download decided the original's key too (its bytes are stored with the product, or not at all).
            if case .download = source.origin, let originalKey = plan.originalKey {
                state.decidedKeys.insert(originalKey)
            }
        }
        manager.store(product, source: source, plan: plan) { storedKeys in
            self.event { state in
                state.pendingStores -= 1
                state.storedKeys.formUnion(storedKeys)
                state.storedProducts.insert(key)
                return state.machine.productStored(key)
            }
        }
        event { state in state.machine.productReady(key, product, stored: state.storedProducts.contains(key)) }
    }
}
