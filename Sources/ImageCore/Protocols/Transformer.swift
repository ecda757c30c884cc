/// Turns one image into another (resize, crop, blur …); its key becomes part of the cache key.
///
/// Threading: called on the SDK's CPU pool, possibly concurrently; must be thread-safe and may block.
/// `transformerKey` must be stable across processes (no addresses, no hash seeds): equal parameters give equal
/// keys and different parameters different keys, because the transformed image is cached under it.
public protocol Transformer: Sendable {
    /// A stable, deterministic key for this transformer and its parameters, e.g. `"resize(256x256,fit)"`.
    var transformerKey: String { get }
    /// Returns the transformed image.
    ///
    /// - Parameters:
    ///   - image: the decoded image (every frame of an animation when ``ImageOptions/transformAnimatedImage`` is
    ///     set).
    ///   - key: the cache key of the original image, for transformers that vary by source.
    /// - Throws: any error; the core reports an ``ImageError`` as it is and any other error as
    ///   ``ImageError/Code/transformFailed``.
    func transform(_ image: Image, forKey key: String) throws -> Image
}

/// A transformer backed by a closure.
public struct BlockTransformer: Transformer {
    /// The key.
    public let transformerKey: String
    private let body: @Sendable (Image, String) throws -> Image

    /// Creates a transformer with a fixed key.
    public init(key: String, _ body: @escaping @Sendable (Image, String) throws -> Image) {
        self.transformerKey = key
        self.body = body
    }

    /// Calls the closure.
    public func transform(_ image: Image, forKey key: String) throws -> Image { try body(image, key) }
}

extension Transformer where Self == BlockTransformer {
    /// A transformer backed by a closure: `manager.transformer = .block(key: "gray") { image, _ in … }`.
    public static func block(
        key: String, _ body: @escaping @Sendable (Image, String) throws -> Image
    ) -> BlockTransformer {
        BlockTransformer(key: key, body)
    }
}
