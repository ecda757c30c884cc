import Foundation

/// Judges the first bytes of a download, so a loader can stop a transfer whose image the load would refuse.
///
/// The manager puts one in the loader's context (``ImageContext/downloadHeaderCheck``) for every download it
/// starts: it probes the bytes with the load's coders and checks the pixel budget of every load waiting on the
/// download. A loader that streams calls it with *all* bytes received so far after each chunk, until it answers
/// something other than ``Verdict/needMoreData``; on ``Verdict/reject(_:)`` it stops the transfer (closing the
/// connection) and completes with that error. Loaders that read whole files at once may call it once.
///
/// Threading: thread-safe and cheap (a header parse, no pixel work); called on the loader's threads.
public struct DownloadHeaderCheck: Sendable {
    /// What the check concluded from the bytes so far.
    public enum Verdict: Sendable {
        /// The header is not complete yet: call again with more bytes.
        case needMoreData
        /// The image passes (or cannot be judged from its header): stop calling, finish the transfer.
        case accept
        /// The load would refuse this image (typically `imageTooLarge`): stop the transfer, fail with the error.
        case reject(ImageError)
    }

    private let body: @Sendable (Data) -> Verdict

    /// Creates a check from a closure that receives every byte received so far.
    public init(_ body: @escaping @Sendable (Data) -> Verdict) { self.body = body }

    /// Judges `prefix`, the bytes received so far.
    public func callAsFunction(_ prefix: Data) -> Verdict { body(prefix) }
}

extension ImageContextOption {
    /// A ``DownloadHeaderCheck`` the manager gives the loader; loaders call it as bytes arrive.
    public static let downloadHeaderCheck = ImageContextOption("downloadHeaderCheck")
    /// `String`: a partition for loads that carry credentials. Such loads share downloads and cache entries only
    /// with loads of the same partition key (e.g. the user or tenant id); without one they share nothing.
    public static let cachePartitionKey = ImageContextOption("cachePartitionKey")
}

extension ImageContext {
    /// The header check of the current download (set by the manager for the loader).
    public var downloadHeaderCheck: DownloadHeaderCheck? {
        get { storage.cold?.downloadHeaderCheck }
        set { update(.downloadHeaderCheck, hasValue: newValue != nil) { $0.coldFields.downloadHeaderCheck = newValue } }
    }

    /// The partition of a credentialed load's downloads and cache entries; see ``ImageContextOption/cachePartitionKey``.
    public var cachePartitionKey: String? {
        get { storage.cachePartitionKey }
        set { update(.cachePartitionKey, hasValue: newValue != nil) { $0.cachePartitionKey = newValue } }
    }
}
