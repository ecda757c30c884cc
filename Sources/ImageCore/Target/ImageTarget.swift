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

extension ImageTarget {
    /// The default operation key: the target's type name.
    public var defaultImageOperationKey: String { String(describing: type(of: self)) }

    /// The URL of the latest `setImage` under the default key.
    public var currentImageURL: URL? { imageTargetState.imageURL(forKey: defaultImageOperationKey) }

    /// The progress of the latest load under the default key: `UIView.sd_imageProgress` as a value.
    ///
    /// Readable from any thread at any time; see ``ImageTargetProgress`` for what sets it.
    public var imageProgress: ImageTargetProgress { imageTargetState.progress(forKey: defaultImageOperationKey) }

    /// The progress under the default key as it changes: the current value first, then every change, until the
    /// target is released (``ImageTargetState/progressUpdates(forKey:)``; there is no KVO on Linux).
    public var imageProgressUpdates: AsyncStream<ImageTargetProgress> {
        imageTargetState.progressUpdates(forKey: defaultImageOperationKey)
    }

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
    ///
    /// Progress: the key's ``ImageTargetProgress`` goes back to zero here, follows the current load's download
    /// progress (a superseded load's reports still reach `progress`, never the target's value) and becomes 1.0
    /// with the final image, before `completed` is called.
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
        let tracking: ImageProgressHandler = { [weak state] received, expected, url in
            state?.reportProgress(received: received, expected: expected, key: key, generation: generation)
            progress?(received, expected, url)
        }
        let operation = manager.loadImage(with: url, options: options, context: loadContext, progress: tracking) {
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
            if isFinal, case .success = result { state?.completeProgress(key: key, generation: generation) }
            if isFinal { state?.finish(key: key, generation: generation) }
            // A superseded load's previews are images nobody shows; its final result is still its caller's.
            guard current || isFinal else { return }
            completed?(result)
        }
        state.attach(operation, key: key, generation: generation)
        return operation
    }
}
