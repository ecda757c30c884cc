import Foundation
import Synchronization

/// The registry of loaders, itself a loader: it routes each URL to the first loader that accepts it.
///
/// Priority: the loader added **last** is asked **first** (like ``CodersManager``). By default it holds only the
/// core's ``DataURLLoader``; plugins add theirs (`HTTPLoader.shared`). Local files are opt-in: add a
/// ``FileLoader`` with the root directory it may serve. Thread-safe.
public final class LoadersManager: ImageLoader, Sendable {
    private let storage: Mutex<[any ImageLoader]>

    /// The process-wide registry (the `data:` loader pre-registered).
    public static let shared = LoadersManager()

    /// Creates a registry holding `loaders` (the last one has the highest priority).
    public init(loaders: [any ImageLoader] = [DataURLLoader()]) { storage = Mutex(loaders) }

    /// The loaders, lowest priority first.
    public var loaders: [any ImageLoader] {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// Adds `loader` with the highest priority.
    public func addLoader(_ loader: any ImageLoader) { storage.withLock { $0.append(loader) } }

    /// Removes loaders of `loader`'s type (or the same instance for classes).
    public func removeLoader(_ loader: any ImageLoader) {
        storage.withLock { list in
            list.removeAll {
                if type(of: $0) is AnyClass, type(of: loader) is AnyClass {
                    return ($0 as AnyObject) === (loader as AnyObject)
                }
                return ObjectIdentifier(type(of: $0)) == ObjectIdentifier(type(of: loader))
            }
        }
    }

    private func loader(for url: URL) -> (any ImageLoader)? {
        loaders.reversed().first { $0.canRequestImage(for: url) }
    }

    /// True when any loader accepts `url`.
    public func canRequestImage(for url: URL) -> Bool { loader(for: url) != nil }

    /// Routes to the first accepting loader; `noLoader` when none does.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        guard let loader = loader(for: url) else {
            completion(.failure(ImageError(.noLoader, stage: .download, message: "no loader for \(url.scheme ?? "?")")))
            return CancellableOperation()
        }
        return loader.requestImage(
            with: url, options: options, context: context, progress: progress, completion: completion)
    }

    /// Asks the loader that handles `url`.
    ///
    /// Every load asks this before it may read a cache, so it avoids routing (which parses the URL once per
    /// loader): when no registered loader would send credentials, the one that handles `url` wouldn't either.
    /// Only when one would is the URL routed to find out whether that one handles it.
    public func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        let loaders = self.loaders
        guard loaders.contains(where: { $0.requestCarriesCredentials(for: url, options: options, context: context) })
        else { return false }
        let handler = loaders.reversed().first { $0.canRequestImage(for: url) }
        return handler?.requestCarriesCredentials(for: url, options: options, context: context) ?? false
    }

    /// Asks the loader that handles `url`.
    public func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String {
        loader(for: url)?.transferKey(for: url, options: options, context: context) ?? ""
    }

    /// The control of the loader that handles `url`.
    public func downloadControl(for url: URL) -> DownloadControl? { loader(for: url)?.downloadControl(for: url) }

    /// Asks the loader that handles `url`.
    public func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool {
        loader(for: url)?.shouldBlockFailedURL(url, error: error) ?? ImageLoaderPolicy.isPermanentFailure(error)
    }
}
