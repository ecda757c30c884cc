import Foundation
import ImageCore

/// RFC 9110 section 13 for a GET: whether the client's copy is current, from `If-None-Match` and
/// `If-Modified-Since`.
///
/// `If-None-Match` wins when present (weak comparison: `W/` is ignored, `*` matches any current entity);
/// `If-Modified-Since` counts only without it, and only when the entity has a `Last-Modified` that is not later
/// than the date. Stateless; thread-safe.
public enum ConditionalRequest {
    /// True when the response would be `304 Not Modified`.
    public static func isNotModified(
        ifNoneMatch: String?, ifModifiedSince: String?, etag: String, lastModified: String?
    ) -> Bool {
        if let ifNoneMatch { return matches(ifNoneMatch: ifNoneMatch, etag: etag) }
        guard let ifModifiedSince, let lastModified, let since = HTTPDate.parse(ifModifiedSince),
            let modified = HTTPDate.parse(lastModified)
        else { return false }
        return modified <= since
    }

    /// True when `ifNoneMatch` (a comma-separated list, or `*`) contains `etag`, ignoring weak `W/` prefixes.
    public static func matches(ifNoneMatch: String, etag: String) -> Bool {
        let strip = { (tag: Substring) in
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
        }
        return ifNoneMatch.split(separator: ",").contains { strip($0) == "*" || strip($0) == strip(etag[...]) }
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only HTTP date format a sender may generate; the parser
/// also reads the two obsolete ones a recipient must accept (RFC 9110 section 5.6.7).
public enum HTTPDate {
    /// `date` as IMF-fixdate, truncated to the whole second (years clamped to 1601…9999). Written without
    /// `DateFormatter`, which a server would otherwise build per response.
    public static func format(_ date: Date) -> String { HTTPDateFormat.format(date) }

    /// The date in `text`, or nil. Parsed without `DateFormatter` (RFC 6265's lenient algorithm, which reads the
    /// three formats): swift-corelibs-foundation's formatter leaks on some inputs, and a server parses these per
    /// request.
    public static func parse(_ text: String) -> Date? { HTTPDateFormat.parse(text) }
}
