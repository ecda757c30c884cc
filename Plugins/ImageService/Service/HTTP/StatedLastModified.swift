import Foundation
import ImageServiceQuery

/// The `Last-Modified` the service states for a thumbnail, from the one its source came with.
///
/// The service is the origin of its answers, so RFC 9110 §8.8.2 binds it: a `Last-Modified` is an HTTP-date, in
/// IMF-fixdate, and never later than the answer's own date (a date in the future is replaced by the message's date,
/// §8.8.2.1). A source's header is passed on only as a date it parses to: text that is no date is dropped (it must
/// not reach clients and the caches in front), and a date ahead of the service's clock is stated as now. The same
/// value is stated and compared with `If-Modified-Since`, so a client's copy is judged by what it was told.
///
/// The source's own text is kept as it came for revalidating the source (`If-Modified-Since` to the origin must
/// repeat it exactly): only what the service says is normalised. Stateless; thread-safe.
enum StatedLastModified {
    /// The header value for a source's `Last-Modified` (`sourceValue`), at `now`; nil when there is none to state.
    static func value(_ sourceValue: String?, now: Date) -> String? {
        guard let sourceValue, let date = HTTPDate.parse(sourceValue) else { return nil }
        return HTTPDate.format(min(date, now))
    }
}
