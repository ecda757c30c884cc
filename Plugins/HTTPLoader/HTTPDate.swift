import Foundation
import ImageCore

/// Parses the dates of HTTP headers: `Expires` of cookies, `Last-Modified`, `Date`.
///
/// Uses the lenient algorithm of RFC 6265 §5.1.1, which accepts the three formats of RFC 9110 (IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, asctime
/// `Sun Nov  6 08:49:37 1994`) and the variants servers send in cookies (`Wed, 21-Oct-2015 07:28:00 GMT`).
/// All dates are UTC. No `DateFormatter`; total on any input, never traps.
public enum HTTPDate {
    /// The date in `text`, or nil when it is not one (missing parts, a day that does not exist, a year before 1601).
    public static func parse(_ text: String) -> Date? { HTTPDateFormat.parse(text) }
}
