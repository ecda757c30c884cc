@_exported import AVIFCoder
@_exported import ColorManagement
@_exported import DiskCache
@_exported import GIFCoder
@_exported import HEIFCoder
@_exported import HTTPLoader
@_exported import ImageCore
@_exported import ImageTransformers
@_exported import JPEGCoder
@_exported import JXLCoder
@_exported import MemoryCache
@_exported import PNGCoder
@_exported import WebPCoder

/// What ``registerDefaultPlugins(memoryCache:diskCache:httpLoader:)`` installed.
public struct DefaultPlugins: Sendable {
    /// The memory level of the default cache.
    public let memoryCache: MemoryCache
    /// The disk level of the default cache.
    public let diskCache: DiskCache
    /// The two levels as one cache (memory first), now ``/ImageCore/ImageManager/defaultImageCache``.
    public let cache: CachesManager
    /// The HTTP loader, registered in ``/ImageCore/LoadersManager/shared`` (now
    /// ``/ImageCore/ImageManager/defaultImageLoader``).
    public let httpLoader: HTTPLoader
}

private let registration = Locked<DefaultPlugins?>(nil)

/// Registers every plugin of the SDK for users who want everything with one call.
///
/// Adds the PNG (and APNG), JPEG, WebP, GIF, AVIF, HEIF and JPEG XL coders to ``/ImageCore/CodersManager/shared``;
/// registers ``/ColorManagement/LCMSColorConverter/shared`` with ``/ImageCore/ColorConversion`` (conversion stays off
/// until a load sets ``/ImageCore/ImageDecodeOptions/convertToSRGB``) and ``/JXLCoder/ButteraugliMetric/shared`` with
/// ``/ImageCore/PerceptualQuality`` (used only by encodes with an ``/ImageCore/ImageEncodeOptions/perceptualTarget``);
/// sets ``/ImageCore/ImageManager/defaultImageCache`` to a ``/ImageCore/CachesManager`` of `memoryCache` then
/// `diskCache`; adds `httpLoader` to ``/ImageCore/LoadersManager/shared`` (beside the file and `data:` loaders) and
/// makes that the default loader. Call it before the first use of ``/ImageCore/ImageManager/shared``. Calling it again
/// returns the first registration and changes nothing.
@discardableResult
public func registerDefaultPlugins(
    memoryCache: MemoryCache = .shared, diskCache: DiskCache = .shared, httpLoader: HTTPLoader = .shared
) -> DefaultPlugins {
    registration.withLock { current in
        if let current { return current }
        for coder: any ImageCoder in [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
            JXLCoder.shared,
        ] {
            CodersManager.shared.addCoder(coder)
        }
        ColorConversion.register(LCMSColorConverter.shared)
        PerceptualQuality.register(ButteraugliMetric.shared)
        let cache = CachesManager([memoryCache, diskCache])
        LoadersManager.shared.addLoader(httpLoader)
        ImageManager.defaultImageCache = cache
        ImageManager.defaultImageLoader = LoadersManager.shared
        let plugins = DefaultPlugins(
            memoryCache: memoryCache, diskCache: diskCache, cache: cache, httpLoader: httpLoader)
        current = plugins
        return plugins
    }
}
