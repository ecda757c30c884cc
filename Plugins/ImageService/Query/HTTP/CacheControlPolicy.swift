/// The `Cache-Control` of thumbnails: shared caches may keep them `maxAge` seconds and serve them stale while
/// revalidating for `staleWhileRevalidate` more (RFC 5861). Value type; thread-safe.
public struct CacheControlPolicy: Sendable, Equatable {
    /// Seconds a thumbnail is fresh.
    public var maxAge: Int
    /// Seconds a stale thumbnail may still be served while a cache revalidates it; 0 leaves it out.
    public var staleWhileRevalidate: Int

    /// Creates a policy.
    public init(maxAge: Int = 86_400, staleWhileRevalidate: Int = 86_400) {
        self.maxAge = maxAge
        self.staleWhileRevalidate = staleWhileRevalidate
    }

    /// The header value for a thumbnail whose source allowed shared caching.
    public var headerValue: String {
        var value = "public, max-age=\(max(0, maxAge))"
        if staleWhileRevalidate > 0 { value += ", stale-while-revalidate=\(staleWhileRevalidate)" }
        return value
    }

    /// The header value for a thumbnail of a source that said `no-store` or `private`: not kept anywhere.
    public static let noStore = "private, no-store"
}
