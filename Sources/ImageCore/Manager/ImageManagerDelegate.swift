import Foundation

/// Lets an app veto downloads and override the failed-URL decision of an ``ImageManager``.
///
/// Threading: called synchronously on the manager's internal threads (the thread that starts a load, or a
/// loader's callback thread); must be fast and thread-safe. Both methods have defaults.
public protocol ImageManagerDelegate: AnyObject, Sendable {
    /// Return false to forbid downloading `url` (the load then fails with `cacheMiss` unless cached).
    func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool
    /// Return true/false to decide whether `url` goes on the failed-URL list after `error`; nil keeps the
    /// loader's decision (``ImageLoader/shouldBlockFailedURL(_:error:)``).
    func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: ImageError) -> Bool?
}

extension ImageManagerDelegate {
    /// Default: allow.
    public func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool { true }
    /// Default: the loader decides.
    public func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: ImageError) -> Bool? { nil }
}
