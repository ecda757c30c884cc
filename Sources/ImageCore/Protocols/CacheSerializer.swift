import Foundation

/// Decides the bytes stored on disk for an image the manager is about to cache under a derived key.
///
/// Only derived results (thumbnails, transformed images) are serialized: originals are stored exactly as
/// downloaded. The bytes should decode to `image` itself: a later disk hit of the derived key is decoded at full
/// size and never transformed again, so it gives back exactly what these bytes hold — a lossy encoding reads back
/// as close, not equal, pixels (see the "What a derived entry reads back" section of <doc:CacheKeys>). Threading:
/// called on the SDK's CPU pool; may block. Returning nil stores nothing on disk for that image.
public protocol CacheSerializer: Sendable {
    /// The bytes to store for `image`.
    ///
    /// - Parameters:
    ///   - image: the derived image (thumbnail, transformed) the manager is about to store on disk.
    ///   - originalData: bytes that decode to exactly `image`, when the caller has them; the manager passes nil
    ///     for derived results (the original's bytes decode to the untransformed, full-size image).
    ///   - imageURL: the URL of the load.
    func cacheData(for image: Image, originalData: Data?, imageURL: URL?) -> Data?
}

/// A cache serializer backed by a closure.
///
/// A class: loads coalesce by the serializer's identity, so loads that name the same instance (a serializer made
/// once and set per request, or the manager's) share one transform and one store; two instances never do.
public final class BlockCacheSerializer: CacheSerializer {
    private let body: @Sendable (Image, Data?, URL?) -> Data?
    /// Creates the serializer.
    public init(_ body: @escaping @Sendable (Image, Data?, URL?) -> Data?) { self.body = body }
    /// Calls the closure.
    public func cacheData(for image: Image, originalData: Data?, imageURL: URL?) -> Data? {
        body(image, originalData, imageURL)
    }
}

extension CacheSerializer where Self == BlockCacheSerializer {
    /// A serializer backed by a closure.
    public static func block(_ body: @escaping @Sendable (Image, Data?, URL?) -> Data?) -> BlockCacheSerializer {
        BlockCacheSerializer(body)
    }
}

/// The default serializer: encodes an image with the coders in its source format (PNG when the format cannot be
/// encoded and the image has alpha, else JPEG), at ``EncodeEffort/fast`` and the default quality (0.85). An
/// animation stays an animation: its own format when that encodes animations (GIF, WebP), else animated WebP, else
/// GIF — never a one-frame still.
///
/// What a disk hit of the derived key reads back follows from that format: the same pixels for PNG, and for GIF
/// when every frame has at most 256 colours; close but not equal pixels for the lossy formats (JPEG, WebP, AVIF,
/// HEIC, JPEG XL), with transparency composited over white for JPEG. Bytes that decode to exactly the image
/// (`originalData`, the first frame of a still) are stored as they are.
public struct DefaultCacheSerializer: CacheSerializer {
    private let coder: any ImageCoder
    private let options: ImageEncodeOptions

    /// Creates the serializer over `coder` (default ``CodersManager/shared``).
    public init(
        coder: any ImageCoder = CodersManager.shared, options: ImageEncodeOptions = ImageEncodeOptions(effort: .fast)
    ) {
        self.coder = coder
        self.options = options
    }

    /// The formats that keep every frame of an animation.
    static let animatedFormats: [ImageFormat] = [.webp, .gif]

    /// Encodes `image`; returns `originalData` untouched when given (it decodes to `image`).
    public func cacheData(for image: Image, originalData: Data?, imageURL: URL?) -> Data? {
        if let originalData { return originalData }
        var candidates: [ImageFormat] = []
        if image.isAnimated {
            if Self.animatedFormats.contains(image.format) { candidates.append(image.format) }
            candidates += Self.animatedFormats
        } else {
            if image.format != .undefined { candidates.append(image.format) }
            candidates.append(image.pixels.layout.hasAlpha ? .png : .jpeg)
            candidates.append(.png)
        }
        for format in candidates where coder.canEncode(to: format) {
            if let data = try? coder.encode(image, as: format, options: options) { return data }
        }
        return nil
    }
}
