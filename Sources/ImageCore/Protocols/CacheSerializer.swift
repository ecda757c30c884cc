import Foundation

/// Decides the bytes stored on disk for an image the manager is about to cache under a derived key.
///
/// Only derived results (thumbnails, transformed images) are serialized: originals are stored exactly as
/// downloaded. The bytes must decode to `image` itself — a later disk hit of the derived key is decoded at full
/// size and never transformed again. Threading: called on the SDK's CPU pool; may block. Returning nil stores
/// nothing on disk for that image.
public protocol CacheSerializer: Sendable {
    /// The bytes to store for `image`.
    ///
    /// - Parameters:
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
/// Without encode options it writes exact encodings only: PNG (APNG for an animation), trusted to keep every 8-bit
/// layout exactly; else the image's own format asked for a lossless encoding, then lossless WebP — each of these
/// decoded again and kept only when every frame's pixels come back equal (so a third-party coder whose format is
/// exact works, and one that isn't never stores an approximation). When none qualifies it returns nil, and the
/// derived image stays in memory only. With encode options (``ImageContextOption/imageEncodeOptions`` on a load,
/// or given here) it encodes as they say, in the image's source format when the coders write it (PNG for an image
/// with alpha when not, else JPEG; an animation in GIF or WebP): the entry then decodes to that encoding of the
/// image — what a caller who asks for a lossy quality chooses. Encode options are part of the product a load shares
/// (loads with other options never share its store).
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

    /// The built-in formats whose encoders are lossy or only optionally lossless: never trusted as the exact
    /// candidate of an image in that format (PNG and WebP's lossless mode come first or next anyway).
    static let inexactFormats: Set<ImageFormat> = [.jpeg, .gif, .avif, .heic, .heif, .jxl, .webp, .png, .undefined]

    /// The lossless settings: fast, since a derived entry is written off the delivery path on every miss.
    static let lossless = ImageEncodeOptions(effort: .fast, lossless: true)

    /// Encodes `image`; returns `originalData` untouched when given (it decodes to `image`).
    public func cacheData(for image: Image, originalData: Data?, imageURL: URL?) -> Data? {
        if let originalData { return originalData }
        guard let options else { return exactData(for: image) }
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

    /// An encoding that decodes to exactly `image`, or nil.
    private func exactData(for image: Image) -> Data? {
        if coder.canEncode(to: .png), let data = try? coder.encode(image, as: .png, options: Self.lossless) {
            return data
        }
        var verified: [ImageFormat] = []
        if !Self.inexactFormats.contains(image.format) { verified.append(image.format) }
        verified.append(.webp)
        for format in verified where coder.canEncode(to: format) {
            guard let data = try? coder.encode(image, as: format, options: Self.lossless) else { continue }
            if decodesExactly(data, to: image) { return data }
        }
        return nil
    }

    /// True when `data` decodes, every frame, to the pixels of `image` (compared as straight RGBA).
    private func decodesExactly(_ data: Data, to image: Image) -> Bool {
        var options = ImageDecodeOptions(preloadAllFrames: true)
        options.animationBudget = .unlimited
        guard let decoded = try? coder.decode(data, options: options),
            decoded.width == image.width, decoded.height == image.height, decoded.frameCount == image.frameCount
        else { return false }
        for index in 0..<image.frameCount {
            guard let mine = try? image.frame(at: index), let theirs = try? decoded.frame(at: index),
                mine.pixels.straightRGBABytes() == theirs.pixels.straightRGBABytes()
            else { return false }
        }
        return true
    }
}
