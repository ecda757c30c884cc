extension ImageOptions {
    /// The flags of ``ImageOptions``, one case each: every static member of the option set is made from one of these
    /// (`ImageOptions(.retryFailed)`), and ``traits`` is an exhaustive switch, so a new flag without a declaration
    /// does not compile. The raw value is the flag's bit index.
    public enum Flag: UInt32, CaseIterable, Sendable, CustomStringConvertible {
        case retryFailed, lowPriority, highPriority, progressiveLoad, refreshCached, handleCookies
        case allowInvalidSSLCertificates, delayPlaceholder, avoidAutoSetImage, transformAnimatedImage
        case scaleDownLargeImages, queryMemoryData, queryMemoryDataSync, queryDiskDataSync, fromCacheOnly
        case fromLoaderOnly, decodeFirstFrameOnly, preloadAllFrames, waitStoreCache, avoidAutoCancelImage
        case refreshStale

        /// What the flag changes.
        public var traits: OptionTraits {
            switch self {
            case .retryFailed: OptionTraits(.sources)
            case .lowPriority, .highPriority: .scheduling
            case .progressiveLoad: .scheduling
            case .refreshCached, .refreshStale:
                OptionTraits([.bytesFetched, .sources], download: .field("etag,lastModified"))
            case .handleCookies: OptionTraits(.bytesFetched, download: .field("cookies"))
            case .allowInvalidSSLCertificates: OptionTraits(.bytesFetched, download: .field("insecure"))
            case .delayPlaceholder, .avoidAutoSetImage, .avoidAutoCancelImage: .scheduling
            case .transformAnimatedImage: OptionTraits(.transform, key: .bypass)
            case .scaleDownLargeImages: OptionTraits(.pixels, key: .bypass, appliesToDecodedImage: true)
            case .queryMemoryData, .queryMemoryDataSync, .queryDiskDataSync: .scheduling
            case .fromCacheOnly, .fromLoaderOnly: OptionTraits(.sources)
            case .decodeFirstFrameOnly: OptionTraits(.pixels, key: .part("frames"), appliesToDecodedImage: true)
            case .preloadAllFrames: OptionTraits(.budget)
            case .waitStoreCache: .scheduling
            }
        }

        /// The flag's name, as its static member spells it.
        public var description: String {
            switch self {
            case .retryFailed: "retryFailed"
            case .lowPriority: "lowPriority"
            case .highPriority: "highPriority"
            case .progressiveLoad: "progressiveLoad"
            case .refreshCached: "refreshCached"
            case .handleCookies: "handleCookies"
            case .allowInvalidSSLCertificates: "allowInvalidSSLCertificates"
            case .delayPlaceholder: "delayPlaceholder"
            case .avoidAutoSetImage: "avoidAutoSetImage"
            case .transformAnimatedImage: "transformAnimatedImage"
            case .scaleDownLargeImages: "scaleDownLargeImages"
            case .queryMemoryData: "queryMemoryData"
            case .queryMemoryDataSync: "queryMemoryDataSync"
            case .queryDiskDataSync: "queryDiskDataSync"
            case .fromCacheOnly: "fromCacheOnly"
            case .fromLoaderOnly: "fromLoaderOnly"
            case .decodeFirstFrameOnly: "decodeFirstFrameOnly"
            case .preloadAllFrames: "preloadAllFrames"
            case .waitStoreCache: "waitStoreCache"
            case .avoidAutoCancelImage: "avoidAutoCancelImage"
            case .refreshStale: "refreshStale"
            }
        }
    }

    /// The flags under which the manager revalidates a cached entry (`.refreshCached`, `.refreshStale`): a loader
    /// given one of them and ``ImageContext/loaderCachedMetadata`` sends that entry's validators (`If-None-Match`,
    /// `If-Modified-Since`) and answers a current copy with ``ImageError/Code/cacheNotModified``.
    ///
    /// Derived from the declarations: the flags whose transfer carries the validators (``OptionTraits/download`` is
    /// the `etag,lastModified` field), so a new revalidating flag reaches every loader by its declaration alone.
    public static let revalidating = ImageOptions(
        rawValue: Flag.allCases.filter { $0.traits.download == .field("etag,lastModified") }
            .reduce(0) { $0 | 1 << $1.rawValue })

    /// The option set holding `flag` alone.
    public init(_ flag: Flag) { self.init(rawValue: 1 << flag.rawValue) }

    /// The flags set in these options (bits no ``Flag`` names are ignored).
    public var flags: [Flag] { Flag.allCases.filter { rawValue & (1 << $0.rawValue) != 0 } }
}
