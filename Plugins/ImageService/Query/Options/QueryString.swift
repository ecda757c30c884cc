import Foundation

/// The pairs of a raw query string, decoded as `application/x-www-form-urlencoded` (`+` is a space).
///
/// Kept in order with duplicates, so the parser can refuse a parameter given twice instead of picking one: a
/// signature covers every pair, and a cache key must not depend on which duplicate a proxy keeps.
public enum QueryString {
    /// A pair that is not valid percent-encoding.
    public struct Invalid: Error, Sendable, Equatable {
        /// The raw pair.
        public let pair: String
    }

    /// The decoded `(name, value)` pairs of `raw` (no leading `?`); a pair without `=` has an empty value.
    ///
    /// - Throws: ``Invalid`` for bad percent-encoding or bytes that are not UTF-8.
    public static func pairs(_ raw: String) throws(Invalid) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        for pair in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = parts.count > 1 ? decode(parts[1]) : ""
            else { throw Invalid(pair: String(pair.prefix(200))) }
            result.append((name, value))
        }
        return result
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// Percent-encodes `value` for a query: everything but unreserved characters (RFC 3986).
    public static func encode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(
            CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
