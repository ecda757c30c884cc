import Foundation
import ImageCore

/// The format a thumbnail is encoded in, as far as it is known before the source is decoded.
///
/// Part of the result's cache key: the same source and request give the same bytes, so an encoding that still
/// depends on the image (alpha, the source's format) is named by its rule, not by its outcome.
public enum OutputEncoding: Hashable, Sendable, CustomStringConvertible {
    /// Always this format.
    case format(ImageFormat)
    /// PNG for images with alpha, JPEG for the rest: what every client takes.
    case jpegOrPNG
    /// The source's own format when the server encodes it, else ``jpegOrPNG``.
    case source
    /// Not an image: the placeholder string of the thumbnail (`text/plain`).
    case placeholder(Placeholder)

    /// The format for `image`, decoded from a source in `sourceFormat`; nil for a ``placeholder(_:)``.
    public func format(for image: Image, sourceFormat: ImageFormat, canEncode: (ImageFormat) -> Bool) -> ImageFormat? {
        switch self {
        case .placeholder: nil
        case .format(let format): format
        case .jpegOrPNG: image.pixels.layout.hasAlpha ? .png : .jpeg
        case .source:
            [.jpeg, .png, .webp, .avif, .gif].contains(sourceFormat) && canEncode(sourceFormat)
                ? sourceFormat
                : OutputEncoding.jpegOrPNG.format(for: image, sourceFormat: sourceFormat, canEncode: canEncode)
        }
    }

    /// `avif`, `webp`, `jpeg-png`, `source`…, as in cache keys.
    public var description: String {
        switch self {
        case .format(let format): format.rawValue
        case .jpegOrPNG: "jpeg-png"
        case .source: "source"
        case .placeholder(let kind): kind.rawValue
        }
    }
}

/// A placeholder a page shows while the image loads, answered as a string instead of an image.
public enum Placeholder: String, Hashable, Sendable, CaseIterable {
    /// BlurHash (blurha.sh), 4 × 3 components: about 28 characters.
    case blurhash
    /// ThumbHash (evanw.github.io/thumbhash), base64: about 30 characters, with the aspect ratio and alpha.
    case thumbhash

    /// The answer's `Content-Type`.
    public static let contentType = "text/plain; charset=utf-8"
}

/// What a request's `format` parameter asks for.
public enum FormatRequest: Hashable, Sendable {
    /// By the client's `Accept` header: AVIF, then WebP, then JPEG/PNG (default; the response varies by Accept).
    case auto
    /// The source's format.
    case source
    /// One format: `jpeg` (`jpg`), `png`, `webp`, `avif` or `gif`.
    case explicit(ImageFormat)
    /// A placeholder string instead of an image: `blurhash` or `thumbhash`.
    case placeholder(Placeholder)

    /// Reads a `format` value.
    public init?(parameter: String) {
        switch parameter.lowercased() {
        case "auto", "": self = .auto
        case "source", "original": self = .source
        case "jpeg", "jpg": self = .explicit(.jpeg)
        case "png": self = .explicit(.png)
        case "webp": self = .explicit(.webp)
        case "avif": self = .explicit(.avif)
        case "gif": self = .explicit(.gif)
        case "blurhash": self = .placeholder(.blurhash)
        case "thumbhash": self = .placeholder(.thumbhash)
        default: return nil
        }
    }

    /// True when the response depends on `Accept` (`Vary: Accept`).
    public var variesByAccept: Bool { self == .auto }

    /// The encoding for a client that sent `accept`.
    public func encoding(accept: String?, canEncodeAVIF: Bool) -> OutputEncoding {
        switch self {
        case .auto: ContentNegotiation.encoding(accept: accept, canEncodeAVIF: canEncodeAVIF)
        case .source: .source
        case .explicit(let format): .format(format)
        case .placeholder(let kind): .placeholder(kind)
        }
    }
}

/// Picks the thumbnail's format from the client's `Accept` header.
public enum ContentNegotiation {
    /// The best encoding the client accepts: AVIF when `accept` lists `image/avif` with a non-zero quality and
    /// `canEncodeAVIF`, else WebP likewise, else JPEG/PNG by the image, or the one of the two the client takes when
    /// it takes only one (`Accept: image/png` got JPEG for an opaque image). A client that takes neither gets JPEG/PNG
    /// (RFC 9110 §12.5.1 lets a server disregard an `Accept` it cannot satisfy).
    public static func encoding(accept: String?, canEncodeAVIF: Bool) -> OutputEncoding {
        if canEncodeAVIF, accepts("image/avif", in: accept) { return .format(.avif) }
        if accepts("image/webp", in: accept) { return .format(.webp) }
        let jpeg = admits(["image/jpeg", "image/jpg"], in: accept)
        let png = admits(["image/png"], in: accept)
        if png && !jpeg { return .format(.png) }
        if jpeg && !png { return .format(.jpeg) }
        return .jpegOrPNG
    }

    /// True when `accept` admits one of `mimeTypes` (aliases of one type): listed with a non-zero quality, or not
    /// listed and covered by `image/*` or `*/*` with one; true without an `Accept` header.
    static func admits(_ mimeTypes: [String], in accept: String?) -> Bool {
        guard let accept else { return true }
        var wildcard = false
        for (type, quality) in ranges(accept) {
            if mimeTypes.contains(type) { return quality > 0 }
            if type == "image/*" || type == "*/*" { wildcard = wildcard || quality > 0 }
        }
        return wildcard
    }

    /// True when `accept` lists `mimeType` with a non-zero quality.
    ///
    /// Only an explicit type counts: `image/*` and `*/*` are sent by clients that cannot decode WebP or AVIF.
    public static func accepts(_ mimeType: String, in accept: String?) -> Bool {
        guard let accept else { return false }
        return ranges(accept).first { $0.type == mimeType }.map { $0.quality > 0 } ?? false
    }

    /// The media ranges of an `Accept` value, lower-cased, each with its quality (1 when it states none).
    private static func ranges(_ accept: String) -> [(type: String, quality: Double)] {
        accept.split(separator: ",").compactMap { range in
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first else { return nil }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return (type, quality)
        }
    }
}
