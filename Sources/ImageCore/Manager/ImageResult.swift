import Foundation

/// One delivery of a load: a final result, or a non-final one (a progressive preview, or the cached image
/// delivered before ``ImageOptions/refreshCached`` revalidates it).
public struct ImageResult: Sendable {
    /// The image.
    public let image: Image
    /// The bytes the image came from, when the stage had them (download, disk, `.queryMemoryData`).
    public let data: Data?
    /// Where the image came from: `.memory`, `.disk`, or `.none` for the loader.
    public let cacheType: ImageCacheType
    /// The requested URL.
    public let url: URL
    /// The cache key the image is stored under (nil when the filter made the load uncacheable).
    public let cacheKey: String?
    /// False for previews and for the cached image of a revalidating load; true exactly once per load.
    public let isFinal: Bool
    /// True when revalidation found the cached image current (HTTP 304): `image` is the cached one.
    public let isNotModified: Bool

    /// Creates a result.
    public init(
        image: Image, data: Data?, cacheType: ImageCacheType, url: URL, cacheKey: String?, isFinal: Bool = true,
        isNotModified: Bool = false
    ) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.url = url
        self.cacheKey = cacheKey
        self.isFinal = isFinal
        self.isNotModified = isNotModified
    }

    /// True when the image was decoded from bytes that end before the image does (a truncated download): it shows
    /// what arrived, and was not cached under the key (see ``ImageManager/storesIncompleteImages``).
    public var isIncomplete: Bool { image.metadata.isIncomplete }

    func nonFinal() -> ImageResult {
        ImageResult(image: image, data: data, cacheType: cacheType, url: url, cacheKey: cacheKey, isFinal: false)
    }
}

/// Progress callback of a load: bytes received and expected.
public typealias ImageProgressHandler = @Sendable (_ receivedBytes: Int, _ expectedBytes: Int?, _ url: URL) -> Void

/// Completion of a load: called zero or more times with non-final results, then exactly once with a final
/// result or an error.
public typealias ImageCompletionHandler = @Sendable (Result<ImageResult, ImageError>) -> Void
