import Foundation

/// What a fetch starts from: a download, or bytes / an image found in a cache.
struct FetchSource: Sendable {
    enum Role: Sendable {
        /// Bytes from the loader.
        case download
        /// The requested key's own cache entry (a disk hit to decode and promote).
        case keyHit
        /// The untransformed original's cache entry (decode, transform, store under the derived key).
        case originalHit
    }

    var data: Data?
    var image: Image?
    var response: ResponseMetadata?
    var cacheType: ImageCacheType
    var role: Role
}

/// A decode is shared by loads with equal decode options and coder.
struct DecodeKey: Hashable, Sendable {
    var options: ImageDecodeOptions
    /// The context's coder (instance identity for classes, type for values); nil for ``CodersManager/shared``.
    var coder: ObjectIdentifier?

    init(options: ImageDecodeOptions, coder: (any ImageCoder)?) {
        self.options = options
        guard let coder else {
            self.coder = nil
            return
        }
        self.coder =
            type(of: coder) is AnyClass ? ObjectIdentifier(coder as AnyObject) : ObjectIdentifier(type(of: coder))
    }
}

/// A product (transform + store) is shared by loads with equal decode key, cache key and store settings.
struct ProductKey: Hashable, Sendable {
    var decode: DecodeKey
    var cacheKey: String?
    var transformerKey: String?
    var transformAnimated: Bool
    var storeCacheType: UInt8
    var originalStoreCacheType: UInt8
}

/// The finished product of a fetch: the image to deliver and the bytes that go with it.
struct FetchProduct: Sendable {
    var image: Image
    var data: Data?
}

/// Who waits on a fetch: the load's handle and its plan.
struct FetchSubscriber: Sendable {
    let operation: ImageLoadOperation
    let plan: LoadPlan
}

/// The locked shell around ``FetchStateMachine``: starts the source, runs decodes and products on the CPU pool,
/// and delivers results. Every state change happens under `state`'s lock; every action runs after it is released.
final class FetchJob: Sendable {
    typealias Machine = FetchStateMachine<
        UInt64, DecodeKey, ProductKey, FetchSubscriber, FetchSource, Image, FetchProduct
    >

    private enum SourceOperation {
        case none
        case running(any ImageOperation)
        case cancelRequested
    }

    private struct State {
        var machine = Machine()
        var sourceOperation = SourceOperation.none
        var storedProducts: Set<ProductKey> = []
        var removed = false
        var progressive: ProgressiveState?
    }

    let key: String
    private let manager: ImageManager
    private let startSource: @Sendable (FetchJob) -> (any ImageOperation)?
    /// Decode and transform inline on the calling thread (`.queryDiskDataSync` cache hits).
    private let runsInline: Bool
    private let state = Locked(State())

    init(
        key: String, manager: ImageManager, runsInline: Bool,
        startSource: @escaping @Sendable (FetchJob) -> (any ImageOperation)?
    ) {
        self.key = key
        self.manager = manager
        self.runsInline = runsInline
        self.startSource = startSource
    }

    // MARK: Events in

    /// Adds a subscriber; nil when the job already finished (the caller then makes a new job).
    func subscribe(_ subscriber: Machine.Subscriber) -> [Machine.Action]? {
        state.withLock { state in
            state.machine.isFinished ? nil : state.machine.subscribe(subscriber)
        }
    }

    /// True once every subscriber was served or left (the registry forgets the job soon after).
    var isFinished: Bool { state.withLock { $0.machine.isFinished } }

    func cancel(_ id: UInt64) { event { $0.machine.cancel(id) } }

    func sourceSucceeded(_ source: FetchSource) { event { $0.machine.sourceFinished(source) } }

    func sourceFailed(_ error: ImageError) { event { $0.machine.sourceFailed(error) } }

    /// Forwards progress to every subscriber and feeds progressive decoding.
    func progress(_ progress: LoadProgress) {
        let subscribers = state.withLock { Array($0.machine.subscribers.values) }
        for subscriber in subscribers {
            subscriber.info.operation.reportProgress(received: progress.receivedBytes, expected: progress.expectedBytes)
        }
        if let partial = progress.partialData {
            let progressive = subscribers.filter { $0.info.plan.options.contains(.progressiveLoad) }
            if let first = progressive.first {
                let coder = (first.info.plan.coder as? any ProgressiveImageCoder) ?? CodersManager.shared
                decodePreview(partial, options: first.decodeKey.options, coder: coder)
            }
        }
    }

    /// Runs an event on the machine, then its actions outside the lock.
    private func event(_ body: (inout State) -> [Machine.Action]) {
        let (actions, finished) = state.withLock { state -> ([Machine.Action], Bool) in
            let actions = body(&state)
            let finished = state.machine.isFinished && !state.removed
            if finished { state.removed = true }
            return (actions, finished)
        }
        perform(actions)
        if finished { manager.removeJob(self) }
    }

    /// Performs the actions of a subscription, then forgets the job if that subscription finished it.
    func performAndSettle(_ actions: [Machine.Action]) {
        perform(actions)
        let finished = state.withLock { state -> Bool in
            guard state.machine.isFinished && !state.removed else { return false }
            state.removed = true
            return true
        }
        if finished { manager.removeJob(self) }
    }

    // MARK: Actions out

    func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .startSource:
                let operation = startSource(self)
                let cancelNow = state.withLock { state -> Bool in
                    if case .cancelRequested = state.sourceOperation { return true }
                    if let operation { state.sourceOperation = .running(operation) }
                    return false
                }
                if cancelNow { operation?.cancel() }
            case .cancelSource:
                let operation = state.withLock { state -> (any ImageOperation)? in
                    defer { state.sourceOperation = .cancelRequested }
                    if case .running(let operation) = state.sourceOperation { return operation }
                    return nil
                }
                operation?.cancel()
            case .startDecode(let key, let source):
                run { self.decode(key, source) }
            case .startProduct(let key, let image, let source):
                guard
                    let plan = state.withLock({
                        $0.machine.subscribers.values.first { $0.productKey == key }?.info.plan
                    })
                else { continue }
                run { self.produce(key, image: image, source: source, plan: plan) }
            case .deliver(let subscribers, let product):
                for subscriber in subscribers { deliver(product, to: subscriber.info, source: pendingSourceType) }
            case .fail(let subscribers, let error):
                for subscriber in subscribers { subscriber.info.operation.finish(.failure(error)) }
            }
        }
    }

    private var pendingSourceType: ImageCacheType {
        state.withLock { state in
            if case .done(let source)? = state.machine.source { return source.cacheType }
            return .none
        }
    }

    private func run(_ work: @escaping @Sendable () -> Void) {
        if runsInline { work() } else { manager.workPool.submit(work) }
    }

    private func deliver(_ product: FetchProduct, to subscriber: FetchSubscriber, source: ImageCacheType) {
        let plan = subscriber.plan
        subscriber.operation.finish(
            .success(
                ImageResult(
                    image: product.image, data: product.data, cacheType: source, url: plan.url, cacheKey: plan.key)))
    }

    // MARK: Decode

    private func decode(_ key: DecodeKey, _ source: FetchSource) {
        if let image = source.image {
            return event { $0.machine.decodeFinished(key, image) }
        }
        let coder = state.withLock { state in
            state.machine.subscribers.values.first { $0.decodeKey == key }?.info.plan.coder
        }
        do {
            guard let data = source.data, !data.isEmpty else {
                throw ImageError(.badImageData, stage: .decode, message: "empty data")
            }
            let image = try CodersManager.decode(data, with: coder ?? CodersManager.shared, options: key.options)
            event { $0.machine.decodeFinished(key, image) }
        } catch {
            let imageError = ImageError.wrap(error, as: .badImageData, stage: .decode)
            if source.role == .download, let plan = anyPlan() { manager.recordFailure(imageError, plan: plan) }
            event { $0.machine.decodeFailed(key, imageError) }
        }
    }

    private func anyPlan() -> LoadPlan? { state.withLock { $0.machine.subscribers.values.first?.info.plan } }

    // MARK: Product

    private func produce(_ key: ProductKey, image decoded: Image, source: FetchSource, plan: LoadPlan) {
        var image = decoded
        var transformed = false
        if let transformer = plan.transformer, !image.isAnimated || plan.options.contains(.transformAnimatedImage) {
            do {
                let output = try transformer.transform(image, forKey: plan.originalKey ?? plan.url.absoluteString)
                var metadata = output.metadata
                metadata.isTransformed = true
                image = output.with(metadata: metadata)
                transformed = true
            } catch {
                let wrapped = ImageError(
                    .transformFailed, stage: .transform, message: transformer.transformerKey,
                    underlying: SendableErrorBox(error))
                return event { $0.machine.productFailed(key, wrapped) }
            }
        }
        let product = FetchProduct(image: image, data: transformed ? nil : source.data)
        // The store may finish before or after the product is marked ready; both events run under the lock, so a
        // load waiting for the store (`.waitStoreCache`) is delivered exactly when both happened.
        manager.store(image, transformed: transformed, source: source, plan: plan) {
            self.event { state in
                state.storedProducts.insert(key)
                return state.machine.productStored(key)
            }
        }
        event { state in state.machine.productReady(key, product, stored: state.storedProducts.contains(key)) }
    }
}

// MARK: Progressive previews

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

    /// Feeds the bytes so far to one incremental decoder, one decode at a time; newer bytes replace queued ones.
    fileprivate func decodePreview(_ data: Data, options: ImageDecodeOptions, coder: any ProgressiveImageCoder) {
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
                guard var progressive = state.progressive, let data = progressive.latest else {
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
            guard let preview = try? box.decoder.currentImage() else { continue }
            let subscribers = state.withLock { state in
                state.machine.subscribers.values.filter { $0.info.plan.options.contains(.progressiveLoad) }
            }
            for subscriber in subscribers {
                let plan = subscriber.info.plan
                subscriber.info.operation.deliverPreview(
                    ImageResult(image: preview, data: nil, cacheType: .none, url: plan.url, cacheKey: plan.key))
            }
        }
    }
}
