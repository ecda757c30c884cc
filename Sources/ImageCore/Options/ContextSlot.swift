import Foundation

/// The built-in keys of ``ImageContext``, each with a stored field in ``ContextStorage``.
///
/// A built-in key read through its typed accessor is a field read: no hashing, no dynamic cast. That matters
/// because every load reads a dozen of them.
enum ContextSlot: Int, CaseIterable, Sendable {
    case imageCache, imageLoader, imageCoder, imageTransformer, cacheKeyFilter, cacheSerializer, callbackQueue
    case imageScaleFactor, imagePreserveAspectRatio, imageThumbnailPixelSize, imageScaleDownLimitBytes
    case imageDecodeOptions, imageEncodeOptions
    case queryCacheType, storeCacheType, originalQueryCacheType, originalStoreCacheType, originalImageCache
    case downloadRequestModifier, downloadResponseModifier, downloadDecryptor
    case loaderCachedImage, loaderCachedMetadata, setImageOperationKey, downloadHeaderCheck, cachePartitionKey
    case loadTimeout

    /// This slot's bit in the masks of ``ContextStorage``.
    var bit: UInt32 { 1 << UInt32(rawValue) }

    /// The key's name (its ``ImageContextOption/rawValue``).
    var name: String {
        switch self {
        case .imageCache: "imageCache"
        case .imageLoader: "imageLoader"
        case .imageCoder: "imageCoder"
        case .imageTransformer: "imageTransformer"
        case .cacheKeyFilter: "cacheKeyFilter"
        case .cacheSerializer: "cacheSerializer"
        case .callbackQueue: "callbackQueue"
        case .imageScaleFactor: "imageScaleFactor"
        case .imagePreserveAspectRatio: "imagePreserveAspectRatio"
        case .imageThumbnailPixelSize: "imageThumbnailPixelSize"
        case .imageScaleDownLimitBytes: "imageScaleDownLimitBytes"
        case .imageDecodeOptions: "imageDecodeOptions"
        case .imageEncodeOptions: "imageEncodeOptions"
        case .queryCacheType: "queryCacheType"
        case .storeCacheType: "storeCacheType"
        case .originalQueryCacheType: "originalQueryCacheType"
        case .originalStoreCacheType: "originalStoreCacheType"
        case .originalImageCache: "originalImageCache"
        case .downloadRequestModifier: "downloadRequestModifier"
        case .downloadResponseModifier: "downloadResponseModifier"
        case .downloadDecryptor: "downloadDecryptor"
        case .loaderCachedImage: "loaderCachedImage"
        case .loaderCachedMetadata: "loaderCachedMetadata"
        case .setImageOperationKey: "setImageOperationKey"
        case .downloadHeaderCheck: "downloadHeaderCheck"
        case .cachePartitionKey: "cachePartitionKey"
        case .loadTimeout: "loadTimeout"
        }
    }

    private static let byName: [String: ContextSlot] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The slot of the built-in key named `name`; nil for plugin keys.
    init?(name: String) {
        guard let slot = Self.byName[name] else { return nil }
        self = slot
    }

    /// The key of this slot.
    var option: ImageContextOption { ImageContextOption(rawValue: name) }
}
