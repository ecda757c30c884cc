/// Flags that change how one load runs: SDWebImage's `SDWebImageOptions` that matter on a server.
public struct ImageOptions: OptionSet, Hashable, Sendable {
    /// The raw bits.
    public let rawValue: UInt32
    /// Creates options from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Load even if the URL is on the failed-URL list; a success removes it from the list.
    public static let retryFailed = ImageOptions(rawValue: 1 << 0)
    /// Download at low priority (prefetching uses this).
    public static let lowPriority = ImageOptions(rawValue: 1 << 1)
    /// Download at high priority (ahead of queued normal requests).
    public static let highPriority = ImageOptions(rawValue: 1 << 2)
    /// Deliver partial images while the bytes arrive (incremental decoding).
    public static let progressiveLoad = ImageOptions(rawValue: 1 << 3)
    /// Deliver the cached image, then revalidate it with the loader (ETag / Last-Modified).
    public static let refreshCached = ImageOptions(rawValue: 1 << 4)
    /// Let the loader send and store cookies.
    public static let handleCookies = ImageOptions(rawValue: 1 << 5)
    /// Accept invalid TLS certificates (tests and internal hosts only).
    public static let allowInvalidSSLCertificates = ImageOptions(rawValue: 1 << 6)
    /// Show the placeholder only after a failure (``ImageTarget``).
    public static let delayPlaceholder = ImageOptions(rawValue: 1 << 7)
    /// Do not set the image on the target; the completion does it.
    public static let avoidAutoSetImage = ImageOptions(rawValue: 1 << 8)
    /// Apply the transformer to animated images too (every frame).
    public static let transformAnimatedImage = ImageOptions(rawValue: 1 << 9)
    /// Decode large images scaled down to the ``ImageContextOption/imageScaleDownLimitBytes`` budget.
    public static let scaleDownLargeImages = ImageOptions(rawValue: 1 << 10)
    /// On a memory hit, also read the image's bytes from the cache.
    public static let queryMemoryData = ImageOptions(rawValue: 1 << 11)
    /// Read memory-cache bytes synchronously (before `loadImage` returns).
    public static let queryMemoryDataSync = ImageOptions(rawValue: 1 << 12)
    /// Read the disk cache synchronously (before `loadImage` returns).
    public static let queryDiskDataSync = ImageOptions(rawValue: 1 << 13)
    /// Never download: a cache miss fails with ``ImageError/Code/cacheMiss``.
    public static let fromCacheOnly = ImageOptions(rawValue: 1 << 14)
    /// Skip the cache query and always download.
    public static let fromLoaderOnly = ImageOptions(rawValue: 1 << 15)
    /// Decode only the first frame of animated images.
    public static let decodeFirstFrameOnly = ImageOptions(rawValue: 1 << 16)
    /// Decode every frame of animated images up front instead of on demand.
    public static let preloadAllFrames = ImageOptions(rawValue: 1 << 17)
    /// Call the completion only after the cache store finished.
    public static let waitStoreCache = ImageOptions(rawValue: 1 << 18)
    /// Do not cancel the target's previous load when a new one starts (``ImageTarget``).
    public static let avoidAutoCancelImage = ImageOptions(rawValue: 1 << 19)
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
