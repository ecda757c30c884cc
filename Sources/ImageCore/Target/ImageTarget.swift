import Foundation

/// Anything that shows one image at a time — the Linux counterpart of `UIImageView+WebCache`.
///
/// Adopt it with a stored ``ImageTargetState`` and a `display(_:)` method; the extension then provides
/// ``setImage(with:placeholder:options:context:manager:progress:completed:)``, which cancels the target's
/// previous load under the same operation key, records the target's current URL, shows the placeholder first
/// (or only after a failure with ``ImageOptions/delayPlaceholder``), sets the image unless
/// ``ImageOptions/avoidAutoSetImage``, and never lets a stale load overwrite a newer one.
///
/// Threading: `display(_:)` is called on the load's callback queue (the context's ``CallbackQueue``; by default
/// the thread that finished the work), and for the placeholder on the thread that calls `setImage`.
public protocol ImageTarget: AnyObject, Sendable {
    /// The target's load bookkeeping; store one instance per target (`let imageTargetState = ImageTargetState()`).
    var imageTargetState: ImageTargetState { get }
    /// Shows `image` (nil clears).
    func display(_ image: Image?)
}

/// Per-target bookkeeping: the running load and URL for each operation key. Thread-safe.
///
/// Owned by the target: when the target is released, this state goes with it and cancels the loads it still
/// runs (a view that goes away stops its downloads); their completions still receive `cancelled`.
public final class ImageTargetState: Sendable {
    struct Entry: Sendable {
        var generation: UInt64
        var url: URL?
        var operation: ImageLoadOperation?
    }

    private let entries = Locked([String: Entry]())
    private let counter = Locked<UInt64>(0)

    /// Creates empty bookkeeping.
    public init() {}

    deinit {
        let operations = entries.withLock { $0.values.compactMap(\.operation) }
        for operation in operations { operation.cancel() }
    }

    /// The URL of the latest `setImage` under `key`.
    public func imageURL(forKey key: String) -> URL? { entries.withLock { $0[key]?.url } }

    /// The running load under `key`, if any.
    public func operation(forKey key: String) -> ImageLoadOperation? { entries.withLock { $0[key]?.operation } }

    /// Cancels the running load under `key`.
    public func cancel(forKey key: String) {
        let operation = entries.withLock { entries -> ImageLoadOperation? in
            defer { entries[key]?.operation = nil }
            return entries[key]?.operation
        }
        operation?.cancel()
    }

    func begin(key: String, url: URL?) -> UInt64 {
        let generation = counter.withLock {
            $0 += 1
            return $0
        }
        entries.withLock { $0[key] = Entry(generation: generation, url: url, operation: nil) }
        return generation
    }

    func isCurrent(key: String, generation: UInt64) -> Bool {
        entries.withLock { $0[key]?.generation == generation }
    }

    func attach(_ operation: ImageLoadOperation, key: String, generation: UInt64) {
        entries.withLock { entries in
            guard entries[key]?.generation == generation, !operation.isFinished else { return }
            entries[key]?.operation = operation
        }
    }

    func finish(key: String, generation: UInt64) {
        entries.withLock { entries in
            if entries[key]?.generation == generation { entries[key]?.operation = nil }
        }
    }
}

extension ImageTarget {
    /// The default operation key: the target's type name.
    public var defaultImageOperationKey: String { String(describing: type(of: self)) }

    /// The URL of the latest `setImage` under the default key.
    public var currentImageURL: URL? { imageTargetState.imageURL(forKey: defaultImageOperationKey) }

    /// Cancels the target's load under `key` (default key when nil).
    public func cancelImageLoad(forKey key: String? = nil) {
        imageTargetState.cancel(forKey: key ?? defaultImageOperationKey)
    }

    /// Loads `url` through `manager` and shows it on this target.
    ///
    /// The operation key is ``ImageContext/setImageOperationKey`` or the type name; loads under different keys
    /// run side by side, and the key is in the context the options processor sees.
    ///
    /// Delivery contract: `completed` receives every delivery of the current load, and the final result of every
    /// load — a superseded load still completes (usually with `cancelled`), only its image is neither displayed
    /// nor passed on as a preview. Releasing the target cancels its loads; they complete with `cancelled`.
    /// - Returns: the load's handle, nil when the URL was nil.
    @discardableResult
    public func setImage(
        with url: URL?, placeholder: Image? = nil, options: ImageOptions = [], context: ImageContext? = nil,
        manager: ImageManager = .shared, progress: ImageProgressHandler? = nil,
        completed: ImageCompletionHandler? = nil
    ) -> ImageLoadOperation? {
        let state = imageTargetState
        let key = context?.setImageOperationKey ?? defaultImageOperationKey
        if !options.contains(.avoidAutoCancelImage) { state.cancel(forKey: key) }
        let generation = state.begin(key: key, url: url)
        if !options.contains(.delayPlaceholder) { display(placeholder) }
        guard let url else {
            if options.contains(.delayPlaceholder) { display(placeholder) }
            state.finish(key: key, generation: generation)
            completed?(.failure(.invalidURL("nil URL")))
            return nil
        }
        var loadContext = context ?? ImageContext()
        loadContext.setImageOperationKey = key
        let operation = manager.loadImage(with: url, options: options, context: loadContext, progress: progress) {
            [weak self, weak state] result in
            let isFinal = (try? result.get())?.isFinal ?? true
            let current = state?.isCurrent(key: key, generation: generation) ?? false
            if current, let self {
                switch result {
                case .success(let value):
                    if !options.contains(.avoidAutoSetImage) { self.display(value.image) }
                case .failure(let error):
                    if options.contains(.delayPlaceholder) && !error.isCancellation { self.display(placeholder) }
                }
            }
            if isFinal { state?.finish(key: key, generation: generation) }
            // A superseded load's previews are images nobody shows; its final result is still its caller's.
            guard current || isFinal else { return }
            completed?(result)
        }
        state.attach(operation, key: key, generation: generation)
        return operation
    }
}
