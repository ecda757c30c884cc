import Foundation
import ImageCore
import NIOHTTP1

/// Reads the response facts the SDK cares about out of HTTP headers.
///
/// Public so that fuzz targets and other loaders can use the same parsing; every function is total (any input
/// gives a value or nil, never a trap) and allocation-light. `Cache-Control` is parsed by ImageCore's
/// ``/ImageCore/CacheControl`` (``/ImageCore/ResponseMetadata/cacheControl``); dates by ``HTTPDate``.
public enum HTTPResponseParsing {
    /// The metadata of a response with `statusCode` and the header fields `headers` (in order), for `url`.
    ///
    /// Header names are lowercased; repeated fields are joined with `", "` (`Set-Cookie` is the exception HTTP
    /// knows of, and the cookie jar reads it from the raw head). The `Cache-Control` header is always kept in
    /// ``/ImageCore/ResponseMetadata/headers``. An ETag that is not a valid entity tag is dropped (it could not be sent
    /// back in `If-None-Match`).
    public static func metadata(
        statusCode: Int, headers fields: some Sequence<(name: String, value: String)>, url: URL?
    ) -> ResponseMetadata {
        var fieldSet = FieldSet(capacity: fields.underestimatedCount)
        for (name, value) in fields { fieldSet.add(name: name, value: value) }
        return fieldSet.metadata(statusCode: statusCode, url: url)
    }

    static func metadata(head: HTTPResponseHead, url: URL) -> ResponseMetadata {
        // Not through the generic overload: iterating the head's fields directly avoids a tuple map per field.
        var fieldSet = FieldSet(capacity: head.headers.count)
        for (name, value) in head.headers { fieldSet.add(name: name, value: value) }
        return fieldSet.metadata(statusCode: Int(head.status.code), url: url)
    }

    /// Header fields by lowercased name, and the five the metadata reads, kept as they are added: a field is
    /// hashed once (its insertion), not again to be read back.
    private struct FieldSet {
        var headers: [String: String]
        var contentType: String?
        var etag: String?
        var lastModified: String?
        var cacheControl: String?
        var contentLength: String?

        init(capacity: Int) { headers = [String: String](minimumCapacity: capacity) }

        /// Adds one field; a repeated one is joined to the earlier ones with `", "`.
        mutating func add(name: String, value: String) {
            let key = name.lowercased()
            var joined = value
            if let existing = headers.updateValue(value, forKey: key) {
                joined = existing + ", " + value
                headers[key] = joined
            }
            switch key {
            case "content-type": contentType = joined
            case "etag": etag = joined
            case "last-modified": lastModified = joined
            case "cache-control": cacheControl = joined
            case "content-length": contentLength = joined
            default: break
            }
        }

        func metadata(statusCode: Int, url: URL?) -> ResponseMetadata {
            ResponseMetadata(
                url: url, statusCode: statusCode, contentType: HTTPResponseParsing.contentType(contentType),
                etag: etag.flatMap(entityTag), lastModified: lastModified, maxAge: maxAge(cacheControl),
                expectedContentLength: contentLength.flatMap(HTTPResponseParsing.contentLength), headers: headers)
        }
    }

    /// The freshness lifetime a `Cache-Control` value gives, seconds: 0 for `no-cache` or `no-store` (a stored
    /// copy must be revalidated before use), else `max-age`, else nil.
    public static func maxAge(_ cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        let directives = CacheControl(headerValue: cacheControl)
        return directives.noCache || directives.noStore ? 0 : directives.maxAge
    }

    /// `image/png; charset=x` → `image/png` (lowercased); nil for a missing or empty value.
    public static func contentType(_ value: String?) -> String? {
        guard let value else { return nil }
        if let fast = value.utf8.withContiguousStorageIfAvailable({ contentTypeBytes($0, of: value) }) { return fast }
        return genericContentType(value)
    }

    /// ``contentType(_:)`` on the bytes of `value`: the value itself when it is already a bare lowercase ASCII
    /// type (what servers send), so the common case makes no new string.
    private static func contentTypeBytes(_ bytes: UnsafeBufferPointer<UInt8>, of value: String) -> String? {
        let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        guard let range = trimmedRange(bytes, end: end) else { return nil }
        var plain = true
        for byte in bytes[range] where byte >= 0x80 || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) {
            plain = false
            break
        }
        if plain && range.count == bytes.count { return value }
        // The range starts and ends next to ASCII bytes (or the ends), so it is valid UTF-8 on its own.
        let type = String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        return plain ? type : type.lowercased()
    }

    static func genericContentType(_ value: String) -> String? {
        let end = value.utf8.firstIndex(of: UInt8(ascii: ";")) ?? value.endIndex
        let type = trimmingBlanks(value[..<end])
        return type.isEmpty ? nil : type.lowercased()
    }

    /// A `Content-Length` value: digits only (surrounding blanks allowed), nil when invalid or absurd.
    public static func contentLength(_ value: String) -> Int? {
        if let fast = value.utf8.withContiguousStorageIfAvailable({ bytes -> Int? in
            guard let range = trimmedRange(bytes, end: bytes.endIndex), range.count <= 18 else { return nil }
            var length = 0
            for byte in bytes[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                length = length * 10 + Int(byte &- 0x30)  // at most 18 digits: never overflows
            }
            return length
        }) {
            return fast
        }
        return genericContentLength(value)
    }

    static func genericContentLength(_ value: String) -> Int? {
        let digits = trimmingBlanks(value[...])
        guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(digits)
    }

    /// The entity tag in an `ETag` value (`"xyz"` or `W/"xyz"`, surrounding blanks removed), or nil when it is
    /// not one (RFC 9110 §8.8.3: visible ASCII or obs-text between the quotes, at most 1 KiB). Unquoted values,
    /// which some servers send, are kept when they hold only visible characters.
    public static func entityTag(_ value: String) -> String? {
        if let fast = value.utf8.withContiguousStorageIfAvailable({ bytes -> String? in
            guard let range = trimmedRange(bytes, end: bytes.endIndex) else { return nil }
            let tag = UnsafeBufferPointer(rebasing: bytes[range])
            guard isEntityTag(tag) else { return nil }
            // An untrimmed value is returned as is: no new string for what servers send.
            return range.count == bytes.count ? value : String(decoding: tag, as: UTF8.self)
        }) {
            return fast
        }
        return genericEntityTag(value)
    }

    static func genericEntityTag(_ value: String) -> String? {
        let tag = trimmingBlanks(value[...])
        guard isEntityTag(tag.utf8) else { return nil }
        return String(tag)
    }

    /// Whether the bytes of a trimmed value form an entity tag (see ``entityTag(_:)``).
    private static func isEntityTag(_ bytes: some BidirectionalCollection<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 1024 else { return false }
        var body = bytes[...]
        if body.starts(with: "W/".utf8) { body = body.dropFirst(2) }
        if body.first == UInt8(ascii: "\"") {
            guard body.count >= 2, body.last == UInt8(ascii: "\"") else { return false }
            body = body.dropFirst().dropLast()
        }
        // etagc = %x21 / %x23-7E / obs-text
        return body.allSatisfy { $0 == 0x21 || ($0 >= 0x23 && $0 != 0x7F) }
    }

    /// The range of `bytes[..<end]` without leading and trailing spaces and tabs; nil when nothing is left.
    private static func trimmedRange(_ bytes: UnsafeBufferPointer<UInt8>, end: Int) -> Range<Int>? {
        var start = bytes.startIndex
        var end = end
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        return start < end ? start..<end : nil
    }

    /// `value` without leading and trailing spaces and tabs (HTTP's optional whitespace, RFC 9110 §5.6.3).
    ///
    /// By bytes: Foundation's `trimmingCharacters(in:)` goes through NSString on Linux; with it, trimming three
    /// header values was about a tenth of what the loader adds per request on top of its client.
    static func trimmingBlanks(_ value: Substring) -> Substring {
        let utf8 = value.utf8
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) })
        else { return value[value.endIndex...] }
        // Both ends sit next to an ASCII byte (or the end), so they are character boundaries.
        return value[first..<utf8.index(after: last)]
    }

    /// An HTTP date (IMF-fixdate, RFC 850, asctime, and the variants cookies use); see ``HTTPDate/parse(_:)``.
    public static func httpDate(_ value: String) -> Date? { HTTPDate.parse(value) }

    /// True when `contentType` is in `allowed`, which may hold wildcards such as `image/*` or `*/*`.
    static func isAcceptable(contentType: String?, allowed: Set<String>?) -> Bool {
        guard let allowed, let contentType else { return true }
        if allowed.contains(contentType) || allowed.contains("*/*") { return true }
        guard let slash = contentType.firstIndex(of: "/") else { return false }
        return allowed.contains(contentType[..<slash] + "/*")
    }
}

/// The configuration's status and content-type rules, applied to a response after every modifier.
struct ResponseValidator: Sendable {
    let statusCodes: Set<Int>
    let contentTypes: Set<String>?
    /// `statusCodes` holds every 2xx (the default), so a 2xx status needs no hashing.
    private let acceptsEvery2xx: Bool

    init(statusCodes: Set<Int>, contentTypes: Set<String>?) {
        self.statusCodes = statusCodes
        self.contentTypes = contentTypes
        acceptsEvery2xx = statusCodes.isSuperset(of: 200..<300)
    }

    /// Why `response` is unusable, or nil. 304 passes (the transfer turns it into `cacheNotModified`).
    func error(for response: ResponseMetadata) -> ImageError? {
        let status = response.statusCode ?? 200
        guard status != 304 else { return nil }
        guard (acceptsEvery2xx && status >= 200 && status < 300) || statusCodes.contains(status) else {
            return .invalidDownloadStatusCode(status)
        }
        // The loader never asks for a range, so a 206 is a part the origin chose to send (or a proxy cut): kept under
        // the URL's key it would stand for the whole image. Only one whose range is the whole representation passes.
        if status == 206 {
            let range = response.headers["content-range"]
            if !Self.isWholeRepresentation(contentRange: range) {
                return ImageError(
                    .invalidDownloadResponse, stage: .download,
                    message: "206 Partial Content (\(range?.prefix(100) ?? "no Content-Range")) for the whole image",
                    statusCode: status)
            }
        }
        guard HTTPResponseParsing.isAcceptable(contentType: response.contentType, allowed: contentTypes) else {
            return ImageError(
                .invalidDownloadContentType, stage: .download,
                message: "content type \(response.contentType ?? "none") is not acceptable", statusCode: status)
        }
        return nil
    }

    /// True when `contentRange` (RFC 9110 §14.4) is `bytes 0-<n-1>/<n>`: the whole representation.
    static func isWholeRepresentation(contentRange: String?) -> Bool {
        guard let contentRange else { return false }
        let parts = contentRange.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return false }
        let spec = parts[1].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2, let complete = Int(spec[1]), complete > 0 else { return false }
        let range = spec[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard range.count == 2, let first = Int(range[0]), let last = Int(range[1]) else { return false }
        return first == 0 && last == complete - 1
    }
}
