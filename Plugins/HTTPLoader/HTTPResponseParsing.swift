import Foundation
import ImageCore
import NIOHTTP1

/// Reads the response facts the SDK cares about out of HTTP headers.
///
/// Public so that fuzz targets and other loaders can use the same parsing; every function is total (any input
/// gives a value or nil, never a trap) and allocation-light. `Cache-Control` is parsed by ImageCore's
/// ``CacheControl`` (``ResponseMetadata/cacheControl``); dates by ``HTTPDate``.
public enum HTTPResponseParsing {
    /// The metadata of a response with `statusCode` and the header fields `headers` (in order), for `url`.
    ///
    /// Header names are lowercased; repeated fields are joined with `", "` (`Set-Cookie` is the exception HTTP
    /// knows of, and the cookie jar reads it from the raw head). The `Cache-Control` header is always kept in
    /// ``ResponseMetadata/headers``. An ETag that is not a valid entity tag is dropped (it could not be sent
    /// back in `If-None-Match`).
    public static func metadata(
        statusCode: Int, headers fields: some Sequence<(name: String, value: String)>, url: URL?
    ) -> ResponseMetadata {
        var headers = [String: String](minimumCapacity: fields.underestimatedCount)
        for (name, value) in fields {
            let key = name.lowercased()
            if let existing = headers[key] {
                headers[key] = existing + ", " + value
            } else {
                headers[key] = value
            }
        }
        return ResponseMetadata(
            url: url, statusCode: statusCode, contentType: contentType(headers["content-type"]),
            etag: headers["etag"].flatMap(entityTag), lastModified: headers["last-modified"],
            maxAge: maxAge(headers["cache-control"]),
            expectedContentLength: headers["content-length"].flatMap(contentLength), headers: headers)
    }

    static func metadata(head: HTTPResponseHead, url: URL) -> ResponseMetadata {
        metadata(statusCode: Int(head.status.code), headers: head.headers.lazy.map { ($0.name, $0.value) }, url: url)
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
        let end = value.utf8.firstIndex(of: UInt8(ascii: ";")) ?? value.endIndex
        let type = trimmingBlanks(value[..<end])
        return type.isEmpty ? nil : type.lowercased()
    }

    /// A `Content-Length` value: digits only (surrounding blanks allowed), nil when invalid or absurd.
    public static func contentLength(_ value: String) -> Int? {
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
        let tag = trimmingBlanks(value[...])
        let bytes = tag.utf8
        guard !bytes.isEmpty, bytes.count <= 1024 else { return nil }
        var body = bytes[...]
        if body.starts(with: "W/".utf8) { body = body.dropFirst(2) }
        if body.first == UInt8(ascii: "\"") {
            guard body.count >= 2, body.last == UInt8(ascii: "\"") else { return nil }
            body = body.dropFirst().dropLast()
        }
        // etagc = %x21 / %x23-7E / obs-text
        guard body.allSatisfy({ $0 == 0x21 || ($0 >= 0x23 && $0 != 0x7F) }) else { return nil }
        return String(tag)
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

    /// Why `response` is unusable, or nil. 304 passes (the transfer turns it into `cacheNotModified`).
    func error(for response: ResponseMetadata) -> ImageError? {
        let status = response.statusCode ?? 200
        guard status != 304 else { return nil }
        guard statusCodes.contains(status) else { return .invalidDownloadStatusCode(status) }
        guard HTTPResponseParsing.isAcceptable(contentType: response.contentType, allowed: contentTypes) else {
            return ImageError(
                .invalidDownloadContentType, stage: .download,
                message: "content type \(response.contentType ?? "none") is not acceptable", statusCode: status)
        }
        return nil
    }
}
