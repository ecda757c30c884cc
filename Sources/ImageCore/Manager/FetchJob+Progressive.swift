import Foundation

// Progressive previews: one incremental decoder per job, fed the newest bytes, one decode at a time; each preview
// is transformed like the final image (a thumbnail view never shows full-size partials, as in Nuke).
extension FetchJob {
    /// Holds the incremental decoder. `@unchecked Sendable`: only the drain loop that set `ProgressiveState.busy`
    /// (under the job's lock) touches the decoder, so it is never used from two threads at once.
    final class DecoderBox: @unchecked Sendable {
        let decoder: any IncrementalImageDecoder
        init(_ decoder: any IncrementalImageDecoder) { self.decoder = decoder }
    }

    struct ProgressiveState {
        var decoder: DecoderBox?
        var busy = false
        var latest: Data?
    }

    /// Forwards progress to every subscriber and feeds progressive decoding.
    func progress(_ progress: LoadProgress) {
        let subscribers = state.withLock { Array($0.machine.subscribers.values) }
        for subscriber in subscribers {
            subscriber.info.operation.reportProgress(received: progress.receivedBytes, expected: progress.expectedBytes)
        }
        guard let partial = progress.partialData,
            let first = subscribers.first(where: { $0.info.plan.options.contains(.progressiveLoad) })
        else { return }
        let coder = (first.info.plan.decoder as? any ProgressiveImageCoder) ?? manager.coders
        decodePreview(partial, options: first.decodeKey.options, coder: coder)
    }

    /// Feeds the bytes so far to one incremental decoder, one decode at a time; newer bytes replace queued ones.
    private func decodePreview(_ data: Data, options: ImageDecodeOptions, coder: any ProgressiveImageCoder) {
        let start = state.withLock { state -> Bool in
            var progressive = state.progressive ?? ProgressiveState()
            progressive.latest = data
            defer { state.progressive = progressive }
            guard !progressive.busy else { return false }
            progressive.busy = true
            return true
        }
        if start { manager.workPool.submit { self.drainPreviews(options: options, coder: coder) } }
    }

    private func drainPreviews(options: ImageDecodeOptions, coder: any ProgressiveImageCoder) {
        while true {
            // The decoder is only touched by the one drain loop that holds `busy`, so it runs outside the lock.
            let next = state.withLock { state -> (Data, DecoderBox?)? in
                guard var progressive = state.progressive, let data = progressive.latest, !state.machine.isFinished
                else {
                    state.progressive?.busy = false
                    return nil
                }
                progressive.latest = nil
                state.progressive = progressive
                return (data, progressive.decoder)
            }
            guard let (data, existing) = next else { return }
            let box = existing ?? DecoderBox(coder.makeIncrementalDecoder(options: options))
            if existing == nil { state.withLock { $0.progressive?.decoder = box } }
            box.decoder.update(data, isFinal: false)
            guard let preview = try? box.decoder.currentImage(), preview.metadata.isPartial else { continue }
            deliverPreview(preview)
        }
    }

    /// Delivers `preview` to every progressive subscriber, transformed once per distinct transformer.
    private func deliverPreview(_ preview: Image) {
        let subscribers = state.withLock { state in
            state.machine.subscribers.values.filter { $0.info.plan.options.contains(.progressiveLoad) }
        }
        var transformed: [String: Image] = [:]
        for subscriber in subscribers {
            let plan = subscriber.info.plan
            var image = preview
            if let transformer = plan.transformer,
                !preview.isAnimated || plan.options.contains(.transformAnimatedImage)
            {
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
