import Foundation

/// Maps a URL to the key its image is cached under (e.g. dropping a signed query string).
///
/// Threading: called synchronously on the thread that starts a load; must be fast and thread-safe.
/// Returning nil makes the load uncacheable (no query, no store).
public protocol CacheKeyFilter: Sendable {
    /// The cache key for `url`, or nil for "do not cache".
    func cacheKey(for url: URL) -> String?
}

/// A cache-key filter backed by a closure.
public struct BlockCacheKeyFilter: CacheKeyFilter {
    private let body: @Sendable (URL) -> String?
    /// Creates the filter.
    public init(_ body: @escaping @Sendable (URL) -> String?) { self.body = body }
    /// Calls the closure.
    public func cacheKey(for url: URL) -> String? { body(url) }
}

extension CacheKeyFilter where Self == BlockCacheKeyFilter {
    /// A filter backed by a closure: `manager.cacheKeyFilter = .block { url in … }`.
    public static func block(_ body: @escaping @Sendable (URL) -> String?) -> BlockCacheKeyFilter {
        BlockCacheKeyFilter(body)
    }
}
