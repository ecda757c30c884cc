import Crypto
import Foundation
import ImageServiceQuery

/// Cache keys and entity tags, built so that distinct inputs can't meet.
///
/// Every part is written as `<byte length>:<bytes>` before it is hashed, so no choice of URL or option text can
/// shift bytes from one part into the next (`a|b` + `c` and `a` + `b|c` differ). The key is a version tag and
/// the SHA-256 of the parts in hex: short, safe as a file or Redis name, and a clean miss when the version
/// changes. Stateless; thread-safe.
enum ServiceKeys {
    /// Bumped whenever the bytes a key names would change (the renderer's behaviour, the options' meaning).
    static let version = "isv1"

    /// The key of a source's bytes in the source cache.
    static func sourceKey(_ source: SourceURL) -> String {
        "\(version)-src-" + digest([source.canonical])
    }

    /// The key of a rendered thumbnail in the result cache: the source, the options, the encoding, and the
    /// server's output settings (`rendering`, ``EncodingSettings/fingerprint``), which change the bytes too.
    static func resultKey(_ options: ThumbnailOptions, encoding: OutputEncoding, rendering: String) -> String {
        "\(version)-res-"
            + digest([options.source.canonical, options.canonicalDescription, encoding.description, rendering])
    }

    /// A strong entity tag for the thumbnail of a source version: the source's URL and validator, the options, the
    /// encoding and the server's output settings. Equal tags mean equal bytes (same source bytes, same rendering),
    /// so a `304` needs no render.
    ///
    /// - Parameter sourceValidator: the source's own ETag or Last-Modified, or a digest of its bytes when it has
    ///   neither (``contentValidator(_:)``).
    static func entityTag(
        _ options: ThumbnailOptions, encoding: OutputEncoding, rendering: String, sourceValidator: String
    ) -> String {
        let hash = digest([
            options.source.canonical, sourceValidator, options.canonicalDescription, encoding.description, rendering,
        ])
        return "\"\(version)-\(hash.prefix(32))\""
    }

    /// The validator of a source that came without ETag and Last-Modified: a digest of its bytes.
    static func contentValidator(_ data: Data) -> String {
        "sha256:" + hex(SHA256.hash(data: data))
    }

    /// The validator of a source: its ETag, else its Last-Modified, else nil (use ``contentValidator(_:)``).
    static func responseValidator(etag: String?, lastModified: String?) -> String? {
        if let etag, !etag.isEmpty { return "etag:" + etag }
        if let lastModified, !lastModified.isEmpty { return "lm:" + lastModified }
        return nil
    }

    static func digest(_ parts: [String]) -> String {
        var hasher = SHA256()
        for part in parts {
            let bytes = Array(part.utf8)
            hasher.update(data: Array("\(bytes.count):".utf8))
            hasher.update(data: bytes)
        }
        return hex(hasher.finalize())
    }

    /// Lowercase hex of `bytes` (a table lookup per nibble: keys are made on every request).
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
