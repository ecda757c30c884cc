/// Flags that change how one load runs: SDWebImage's `SDWebImageOptions` that matter on a server.
///
/// Each flag is one ``Flag`` case, which declares what it changes (``Flag/traits``, listed in ``OptionCatalog``).
public struct ImageOptions: OptionSet, Hashable, Sendable {
    /// The raw bits.
    public let rawValue: UInt32
    /// Creates options from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Load even if the URL is on the failed-URL list; a success removes it from the list.
    public static let retryFailed = ImageOptions(.retryFailed)
    /// Download at low priority (prefetching uses this).
    public static let lowPriority = ImageOptions(.lowPriority)
    /// Download at high priority (ahead of queued normal requests).
    public static let highPriority = ImageOptions(.highPriority)
    /// Deliver partial images while the bytes arrive (incremental decoding).
    public static let progressiveLoad = ImageOptions(.progressiveLoad)
    /// Deliver the cached image, then revalidate it with the loader (ETag / Last-Modified).
    public static let refreshCached = ImageOptions(.refreshCached)
    /// Serve a cached entry only while the response it came from said it is fresh, and revalidate it once stale.
    ///
    /// Fresh means the entry's ``CacheEntryMetadata/expiresAt`` (now + the response's `Cache-Control: max-age` when
    /// stored) has not passed; an entry without one (no `max-age`, `no-cache`, a level that keeps no metadata) is
    /// stale. A stale entry is revalidated with the loader before the load answers, with the entry's validators
    /// (`If-None-Match`, `If-Modified-Since`): a 304 answers with the cached image (``ImageResult/isNotModified``)
    /// and renews the entry's lifetime from the 304's `max-age`, else the stored one; new bytes replace it. Unlike
    /// ``refreshCached``, nothing is delivered before the answer, and a fresh entry costs no request. A failed
    /// revalidation fails the load; with ``fromCacheOnly`` the stale entry is the answer. No effect on data loads,
    /// which never read the cache; ``refreshCached`` in the same options wins.
    public static let refreshStale = ImageOptions(.refreshStale)
    /// Let the loader send and store cookies.
    public static let handleCookies = ImageOptions(.handleCookies)
    /// Accept invalid TLS certificates (tests and internal hosts only).
    public static let allowInvalidSSLCertificates = ImageOptions(.allowInvalidSSLCertificates)
    /// Show the placeholder only after a failure (``ImageTarget``).
    public static let delayPlaceholder = ImageOptions(.delayPlaceholder)
    /// Do not set the image on the target; the completion does it.
    public static let avoidAutoSetImage = ImageOptions(.avoidAutoSetImage)
    /// Apply the transformer to animated images too (every frame).
    public static let transformAnimatedImage = ImageOptions(.transformAnimatedImage)
    /// Decode large images scaled down to the ``ImageContextOption/imageScaleDownLimitBytes`` budget.
    public static let scaleDownLargeImages = ImageOptions(.scaleDownLargeImages)
    /// On a memory hit, also read the image's bytes from the cache.
    public static let queryMemoryData = ImageOptions(.queryMemoryData)
    /// Read memory-cache bytes synchronously (before `loadImage` returns).
    public static let queryMemoryDataSync = ImageOptions(.queryMemoryDataSync)
    /// Read the disk cache synchronously (before `loadImage` returns).
    public static let queryDiskDataSync = ImageOptions(.queryDiskDataSync)
    /// Never download: a cache miss fails with ``ImageError/Code/cacheMiss``.
    public static let fromCacheOnly = ImageOptions(.fromCacheOnly)
    /// Skip the cache query and always download.
    public static let fromLoaderOnly = ImageOptions(.fromLoaderOnly)
    /// Decode only the first frame of animated images.
    public static let decodeFirstFrameOnly = ImageOptions(.decodeFirstFrameOnly)
    /// Decode every frame of animated images up front instead of on demand.
    public static let preloadAllFrames = ImageOptions(.preloadAllFrames)
    /// Call the completion only after the cache store finished.
    public static let waitStoreCache = ImageOptions(.waitStoreCache)
    /// Do not cancel the target's previous load when a new one starts (``ImageTarget``).
    public static let avoidAutoCancelImage = ImageOptions(.avoidAutoCancelImage)
}

/// Which cache levels an operation touches.
public struct ImageCacheType: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates a cache type from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// No cache: the image came from the loader, or the operation is skipped.
    public static let none: ImageCacheType = []
    /// The in-memory level.
    public static let memory = ImageCacheType(rawValue: 1 << 0)
    /// The on-disk level.
    public static let disk = ImageCacheType(rawValue: 1 << 1)
    /// Both levels.
    public static let all: ImageCacheType = [.memory, .disk]

    /// "none", "memory", "disk" or "all".
    public var description: String {
        switch self {
        case .none: "none"
        case .memory: "memory"
        case .disk: "disk"
        default: "all"
        }
    }
}
