import Foundation

// Progressive previews: one incremental decoder per decode key in use (at most `maxPreviewDecoders`), fed the
// newest bytes, one decode at a time; each preview goes only to the loads of its decode key (their thumbnail size,
// budget and coder), transformed like the final image (a thumbnail view never shows full-size partials, as in Nuke).
extension FetchJob {
    /// Holds an incremental decoder. `@unchecked Sendable`: only the drain loop that set its
    /// `PreviewDecoder.busy` (under the job's lock) touches the decoder, so it is never used from two threads.
    final class DecoderBox: @unchecked Sendable {
        let decoder: any IncrementalImageDecoder
        /// The preview delivered last: a decoder that answers the same image again (nothing new decoded) is not
        /// delivered twice.
        var lastPreview: Image?
        init(_ decoder: any IncrementalImageDecoder) { self.decoder = decoder }
    }

    /// The previews of one decode key.
    struct PreviewDecoder {
        var decoder: DecoderBox?
        var busy = false
        var latest: Data?
    }

    struct ProgressiveState {
        var decoders: [DecodeKey: PreviewDecoder] = [:]
    }

    /// Distinct decode keys that get previews; loads of further keys get only their final image.
    static let maxPreviewDecoders = 4

    /// Forwards progress to every subscriber and feeds progressive decoding.
    func progress(_ progress: LoadProgress) {
        let subscribers = state.withLock { Array($0.machine.subscribers.values) }
        for subscriber in subscribers {
            subscriber.info.operation.reportProgress(received: progress.receivedBytes, expected: progress.expectedBytes)
        }
        guard let partial = progress.partialData else { return }
        var started: Set<DecodeKey> = []
        // A data load's `.progressiveLoad` asks for nothing: it has no image to preview.
        for subscriber in subscribers
        where !subscriber.wantsSource && subscriber.info.plan.options.contains(.progressiveLoad) {
            guard started.insert(subscriber.decodeKey).inserted else { continue }
            decodePreview(partial, key: subscriber.decodeKey, plan: subscriber.info.plan)
        }
    }

    /// Feeds the bytes so far to the key's incremental decoder, one decode at a time; newer bytes replace queued ones.
    private func decodePreview(_ data: Data, key: DecodeKey, plan: LoadPlan) {
        let start = state.withLock { state -> Bool in
            var progressive = state.progressive ?? ProgressiveState()
            defer { state.progressive = progressive }
            guard var preview = progressive.decoders[key] ?? newPreviewDecoder(count: progressive.decoders.count)
            else { return false }
            defer { progressive.decoders[key] = preview }
            preview.latest = data
            guard !preview.busy else { return false }
            preview.busy = true
            return true
        }
        if start { manager.workPool.submit { self.drainPreviews(key: key, plan: plan) } }
    }

    private func newPreviewDecoder(count: Int) -> PreviewDecoder? {
        count < Self.maxPreviewDecoders ? PreviewDecoder() : nil
    }

    private func drainPreviews(key: DecodeKey, plan: LoadPlan) {
        while true {
            // The decoder is only touched by the one drain loop that holds `busy`, so it runs outside the lock.
            let next = state.withLock { state -> (Data, DecoderBox?)? in
                guard var preview = state.progressive?.decoders[key], let data = preview.latest,
                    !state.machine.isFinished
                else {
                    state.progressive?.decoders[key]?.busy = false
                    return nil
                }
                preview.latest = nil
                state.progressive?.decoders[key] = preview
                return (data, preview.decoder)
            }
            guard let (data, existing) = next else { return }
            let box = existing ?? DecoderBox(makePreviewDecoder(plan: plan, options: key.options))
            if existing == nil { state.withLock { $0.progressive?.decoders[key]?.decoder = box } }
            box.decoder.update(data, isFinal: false)
            guard let preview = try? box.decoder.currentImage(), preview.metadata.isPartial,
                preview !== box.lastPreview
            else { continue }
            box.lastPreview = preview
            // A partial animation shows one frame; its final image is an animation all the same (the header says),
            // unless the decode options keep its first frame: then it is a still image, and so is every preview.
            let frames = max((plan.coder ?? manager.coders).probe(data)?.frameCount ?? 0, preview.frameCount)
            let finalIsAnimated = frames > 1 && !key.options.keepsFirstFrameOnly(frameCount: frames)
            let shown = preview.isAnimated && !finalIsAnimated ? preview.with(frames: [preview.frames[0]]) : preview
            deliverPreview(shown, key: key, finalIsAnimated: finalIsAnimated)
        }
    }

    /// The incremental decoder of a load's previews: its own coder's when the context names a progressive one, else
    /// the manager's registry; either way under the same contract and with the same steps after the coder as the
    /// final decode (``CodersManager/makeIncrementalDecoder(with:options:)``), since previews get the whole decode
    /// (``LoadTraits``). A context coder that isn't progressive gets no previews.
    private func makePreviewDecoder(plan: LoadPlan, options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        guard let coder = plan.coder else { return manager.coders.makeIncrementalDecoder(options: options) }
        guard let progressive = coder as? any ProgressiveImageCoder else { return NoPreviews() }
        return CodersManager.makeIncrementalDecoder(with: progressive, options: options)
    }

    /// Delivers `preview` to every progressive subscriber of `key`, transformed once per distinct transformer — as
    /// the final image will be (``ImageOptions/transformsImage(animated:)`` of `finalIsAnimated`).
    private func deliverPreview(_ preview: Image, key: DecodeKey, finalIsAnimated: Bool) {
        let subscribers = state.withLock { state in
            state.machine.subscribers.values.filter {
                $0.decodeKey == key && !$0.wantsSource && $0.info.plan.options.contains(.progressiveLoad)
            }
        }
        var transformed: [String: Image] = [:]
        for subscriber in subscribers {
            let plan = subscriber.info.plan
            var image = preview
            if let transformer = plan.transformer, plan.options.transformsImage(animated: finalIsAnimated) {
                let transformerKey = transformer.transformerKey
                if let done = transformed[transformerKey] {
                    image = done
                } else {
                    guard
                        let output = try? transformer.transform(
                            preview, forKey: plan.originalKey ?? plan.url.absoluteString)
                    else { continue }
                    var metadata = output.metadata
                    metadata.isPartial = true
                    metadata.isTransformed = true
                    image = output.with(metadata: metadata)
                    transformed[transformerKey] = image
                }
            }
            subscriber.info.operation.deliverPreview(
                ImageResult(image: image, data: nil, cacheType: .none, url: plan.url, cacheKey: plan.key))
        }
    }
}

/// The decoder of a load whose coder can't decode incrementally: never a preview.
private final class NoPreviews: IncrementalImageDecoder {
    func update(_ data: Data, isFinal: Bool) {}
    func currentImage() throws -> Image? { nil }
}
