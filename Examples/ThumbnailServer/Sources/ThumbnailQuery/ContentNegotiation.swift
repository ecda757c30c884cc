import Foundation
import ImageCore

/// Picks the thumbnail's format from the client's `Accept` header.
public enum ContentNegotiation {
    /// The thumbnail formats the server answers with, best first.
    public enum Encoding: String, Sendable, CaseIterable {
        /// AVIF, for clients that list `image/avif` (current browsers): the smallest files.
        case avif
        /// WebP, for clients that list `image/webp`.
        case webp
        /// What every client takes: PNG for images with alpha, JPEG for the rest.
        case jpegOrPNG = "jpeg-png"

        /// The format for `image`.
        public func format(for image: Image) -> ImageFormat {
            switch self {
            case .avif: .avif
            case .webp: .webp
            case .jpegOrPNG: image.pixels.layout.hasAlpha ? .png : .jpeg
            }
        }
    }

    /// The best encoding the client accepts: AVIF when `accept` lists `image/avif` with a non-zero quality and
    /// `canEncodeAVIF`, else WebP likewise, else JPEG/PNG.
    public static func encoding(accept: String?, canEncodeAVIF: Bool) -> Encoding {
        if canEncodeAVIF, accepts("image/avif", in: accept) { return .avif }
        return accepts("image/webp", in: accept) ? .webp : .jpegOrPNG
    }

    /// True when `accept` lists `image/webp` with a non-zero quality.
    public static func acceptsWebP(_ accept: String?) -> Bool { accepts("image/webp", in: accept) }

    /// True when `accept` lists `mimeType` with a non-zero quality.
    ///
    /// Only an explicit type counts: `image/*` and `*/*` are sent by clients that cannot decode WebP or AVIF.
    public static func accepts(_ mimeType: String, in accept: String?) -> Bool {
        guard let accept else { return false }
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == mimeType else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
        return false
    }

    /// True when `ifNoneMatch` (a comma-separated list, or `*`) contains `etag`, ignoring weak `W/` prefixes.
    public static func matches(ifNoneMatch: String?, etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let strip = { (tag: Substring) in
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
        }
        return ifNoneMatch.split(separator: ",").contains { strip($0) == "*" || strip($0) == strip(etag[...]) }
    }
}
