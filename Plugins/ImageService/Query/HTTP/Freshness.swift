import Foundation
import ImageCore

/// How long the service reuses a cached source before it asks the origin again (RFC 9111 section 4.2), and how
/// long its answers may be kept by the client and the caches in front.
///
/// A source's own lifetime comes from its response: `s-maxage`, else `max-age`, else `Expires` minus `Date`, less
/// the `Age` it already had; without any of those, ``defaultTTL`` (a heuristic lifetime). The service keeps reusing
/// the source for that lifetime clamped to ``minimumTTL`` ... ``maximumTTL``, then revalidates it with its
/// validators (`If-None-Match`, `If-Modified-Since`): a 304 keeps the bytes for another lifetime, a 200 replaces
/// them (and every thumbnail's ETag with them). The clamp protects the origin (``minimumTTL``) and bounds how long
/// a change can go unseen (``maximumTTL``); it never lengthens what the service *promises*: an answer's `max-age`
/// is at most what is left of the source's own, unclamped lifetime for a private cache, and its `s-maxage` of that
/// for a shared one (``answerAges(configured:freshness:now:)``).
/// Value type; thread-safe.
public struct FreshnessPolicy: Sendable, Equatable {
    /// The least time a source is reused before a revalidation, seconds (default 0: the source's word).
    public var minimumTTL: Double
    /// The most time a source is reused before a revalidation, seconds (default 7 days).
    public var maximumTTL: Double
    /// The lifetime of a source that says nothing about it (no `Cache-Control` lifetime, no `Expires`), seconds
    /// (default 1 day, the answer's own default `max-age`).
    public var defaultTTL: Double

    /// Creates a policy.
    public init(minimumTTL: Double = 0, maximumTTL: Double = 7 * 86_400, defaultTTL: Double = 86_400) {
        self.minimumTTL = max(0, minimumTTL)
        self.maximumTTL = max(self.minimumTTL, maximumTTL)
        self.defaultTTL = max(0, defaultTTL)
    }

    /// The freshness of a response received at `now` with `headers` (lower-case names).
    public func freshness(headers: [String: String], now: Date) -> SourceFreshness {
        freshness(
            lifetime: Self.ownLifetime(headers: headers, now: now),
            privateLifetime: Self.ownPrivateLifetime(headers: headers, now: now), now: now)
    }

    /// The freshness of a source whose own lifetime is `lifetime` seconds from `now` (nil: it stated none).
    public func freshness(lifetime: Double?, now: Date) -> SourceFreshness {
        freshness(lifetime: lifetime, privateLifetime: nil, now: now)
    }

    /// The freshness of a source whose own lifetime is `lifetime` seconds from `now` for a shared cache (nil: it
    /// stated none) and `privateLifetime` for a private one (``ownPrivateLifetime(headers:now:)``; nil: the same).
    public func freshness(lifetime: Double?, privateLifetime: Double?, now: Date) -> SourceFreshness {
        let own = lifetime ?? defaultTTL
        let clamped = min(maximumTTL, max(minimumTTL, own))
        // A source that states no lifetime puts no bound on what the answer may promise: the heuristic lifetime is
        // the service's own choice of when to ask again.
        let sourceFreshUntil = lifetime.map { now.addingTimeInterval(max(0, $0)) } ?? .distantFuture
        let privateFreshUntil = privateLifetime.map { now.addingTimeInterval(max(0, $0)) }
        return SourceFreshness(
            reuseUntil: now.addingTimeInterval(clamped), sourceFreshUntil: sourceFreshUntil,
            privateFreshUntil: privateFreshUntil == sourceFreshUntil ? nil : privateFreshUntil)
    }

    /// The response's own remaining lifetime for a shared cache, as the service is, in seconds (`s-maxage`,
    /// `max-age`, `Expires` − `Date`, less `Age`; `no-cache` is 0), or nil when it states none.
    public static func ownLifetime(headers: [String: String], now: Date) -> Double? {
        lifetime(headers: headers, now: now, shared: true)
    }

    /// The response's own remaining lifetime for a private cache (a browser), in seconds: as
    /// ``ownLifetime(headers:now:)`` but without `s-maxage`, which binds shared caches only; nil when it states none
    /// apart from `s-maxage` (an answer then promises a browser no more than a shared cache).
    public static func ownPrivateLifetime(headers: [String: String], now: Date) -> Double? {
        lifetime(headers: headers, now: now, shared: false)
    }

    private static func lifetime(headers: [String: String], now: Date, shared: Bool) -> Double? {
        let control = CacheControl(headerValue: headers["cache-control"])
        let age = headers["age"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }.map { max(0, $0) } ?? 0
        if control.noCache { return 0 }
        if let seconds = (shared ? control.sharedMaxAge : nil) ?? control.maxAge {
            return max(0, Double(seconds) - age)
        }
        guard let expiresText = headers["expires"] else { return nil }
        // An Expires that is not a date (often "0" or "-1") means already expired (RFC 9111 section 5.3).
        guard let expires = HTTPDate.parse(expiresText) else { return 0 }
        let date = headers["date"].flatMap(HTTPDate.parse) ?? now
        return max(0, expires.timeIntervalSince(date) - age)
    }

    /// The `max-age` an answer may carry: `configured`, but never beyond what is left of the source's own lifetime.
    public static func answerMaxAge(configured: Int, sourceFreshUntil: Date, now: Date) -> Int {
        let left = sourceFreshUntil.timeIntervalSince(now)
        guard left.isFinite else { return max(0, configured) }
        return max(0, min(configured, Int(left.rounded(.down))))
    }

    /// The ages an answer made from a source of `freshness` may state at `now`: `max-age` within what is left of
    /// the source's lifetime for a private cache, and `s-maxage` within what is left of its lifetime for a shared
    /// one, stated only when it differs from `max-age` (a source with `max-age=10, s-maxage=600` lets a browser keep
    /// the answer 10 s and a CDN 600 s; one `max-age` of 600 promised a browser 590 s the source never allowed).
    public static func answerAges(
        configured: Int, freshness: SourceFreshness, now: Date
    ) -> (maxAge: Int, sharedMaxAge: Int?) {
        let shared = answerMaxAge(configured: configured, sourceFreshUntil: freshness.sourceFreshUntil, now: now)
        guard let privateFreshUntil = freshness.privateFreshUntil else { return (shared, nil) }
        let maxAge = answerMaxAge(configured: configured, sourceFreshUntil: privateFreshUntil, now: now)
        return (maxAge, shared == maxAge ? nil : shared)
    }
}

/// When a cached source must be revalidated, and until when its origin allowed it to be reused.
public struct SourceFreshness: Sendable, Equatable, Codable {
    /// Until when the service reuses it without asking the origin (the source's lifetime, clamped).
    public var reuseUntil: Date
    /// Until when the source itself said it is fresh for a shared cache (unclamped; `distantFuture` when it said
    /// nothing): an answer never promises beyond it.
    public var sourceFreshUntil: Date
    /// Until when the source said a private cache (a browser) may reuse it, when that differs from
    /// ``sourceFreshUntil`` (its `max-age` beside an `s-maxage`); nil: the same. An answer's `max-age` never
    /// promises beyond it. Records stored without it decode as nil.
    public var privateFreshUntil: Date?

    /// Creates a freshness.
    public init(reuseUntil: Date, sourceFreshUntil: Date) {
        self.init(reuseUntil: reuseUntil, sourceFreshUntil: sourceFreshUntil, privateFreshUntil: nil)
    }

    /// Creates a freshness whose private lifetime differs from its shared one.
    public init(reuseUntil: Date, sourceFreshUntil: Date, privateFreshUntil: Date?) {
        self.reuseUntil = reuseUntil
        self.sourceFreshUntil = sourceFreshUntil
        self.privateFreshUntil = privateFreshUntil
    }

    /// True while the service may reuse the source without revalidating.
    public func isFresh(at now: Date) -> Bool { now < reuseUntil }
}
