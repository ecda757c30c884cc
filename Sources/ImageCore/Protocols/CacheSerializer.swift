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

/// The default serializer: writes bytes that decode to exactly the image it is given, so a derived key's disk
/// entry reads back the pixels its first load delivered (the contract above).
///
/// Without encode options it writes exact encodings only — a format whose coder promises it
/// (``ImageCoder/encodesExactly(to:)``: PNG and APNG, lossless WebP, or a third-party coder's own format), asked
/// for ``ImageEncodeOptions/lossless``: PNG first, then the image's own format, then WebP. When no coder promises
/// one it returns nil, and the derived image stays in memory only. With encode options
/// (``ImageContextOption/imageEncodeOptions`` on a load, or given here) it encodes as they say, in the image's
/// source format when the coders write it (PNG for an image with alpha when not, else JPEG; an animation in GIF or
/// WebP): the entry then decodes to that encoding of the image — what a caller who asks for a lossy quality
/// chooses. Encode options are part of the product a load shares (loads with other options never share its store).
public struct DefaultCacheSerializer: CacheSerializer {
    private let coder: any ImageCoder
    private let options: ImageEncodeOptions?

    /// Creates the serializer over `coder` (default ``CodersManager/shared``); nil `options` writes exact encodings
    /// only.
    public init(coder: any ImageCoder = CodersManager.shared, options: ImageEncodeOptions? = nil) {
        self.coder = coder
        self.options = options
    }

    /// The formats that keep every frame of an animation.
    static let animatedFormats: [ImageFormat] = [.webp, .gif]

    /// The exact settings: fast, since a derived entry is written off the delivery path on every miss.
    static let lossless = ImageEncodeOptions(effort: .fast, lossless: true)

    /// Encodes `image`; returns `originalData` untouched when given (it decodes to `image`).
    public func cacheData(for image: Image, originalData: Data?, imageURL: URL?) -> Data? {
        if let originalData { return originalData }
        guard let options else {
            for format in [ImageFormat.png, image.format, .webp]
            where format != .undefined && coder.canEncode(to: format) && coder.encodesExactly(to: format) {
                if let data = try? coder.encode(image, as: format, options: Self.lossless) { return data }
            }
            return nil
        }
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
