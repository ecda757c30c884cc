/// The directives of an HTTP `Cache-Control` header that decide whether and how long a response may be cached.
///
/// Parsing is lenient (RFC 9111 §5.2: unknown directives are ignored, names are case-insensitive, values may be
/// quoted) and total: any input yields a value, never a trap.
public struct CacheControl: Hashable, Sendable {
    /// `no-store`: the response must not be stored in any cache.
    public var noStore = false
    /// `no-cache`: a stored copy must be revalidated before each use.
    public var noCache = false
    /// `private`: the response is meant for one user; a shared cache must not store it.
    public var isPrivate = false
    /// `public`: any cache may store the response.
    public var isPublic = false
    /// `must-revalidate`.
    public var mustRevalidate = false
    /// `immutable`.
    public var immutable = false
    /// `max-age` in seconds (clamped to 0...Int32.max as RFC 9111 §1.2.2 advises). A value that is not
    /// delta-seconds (`max-age=-1`, `max-age=abc`, `max-age` alone) is 0: invalid freshness information means stale
    /// (RFC 9111 §4.2.1), as an `Expires` that is not a date does; it never falls back to a default lifetime.
    public var maxAge: Int?
    /// `s-maxage` in seconds (clamped and judged like ``maxAge``).
    public var sharedMaxAge: Int?

    /// No directives.
    public init() {}

    /// Parses a header value (several header lines may be joined with commas); nil parses as no directives.
    public init(headerValue: String?) {
        guard let headerValue else { return }
        for item in headerValue.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingWhitespace().lowercased()
            var value = parts.count > 1 ? parts[1].trimmingWhitespace() : nil
            if let quoted = value, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                value = String(quoted.dropFirst().dropLast())
            }
            switch name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "private": isPrivate = true
            case "public": isPublic = true
            case "must-revalidate": mustRevalidate = true
            case "immutable": immutable = true
            case "max-age": maxAge = Self.seconds(value) ?? 0
            case "s-maxage": sharedMaxAge = Self.seconds(value) ?? 0
            default: continue
            }
        }
    }

    /// Delta-seconds: digits only; larger values saturate at `Int32.max` (RFC 9111 §1.2.2).
    private static func seconds(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var result = 0
        for digit in value.utf8 {
            result = result * 10 + Int(digit - 0x30)
            if result >= Int(Int32.max) { return Int(Int32.max) }
        }
        return result
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
