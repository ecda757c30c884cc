import Foundation

/// A cache query of a load that missed: the cache may hold something for the key until it hears how the fetch
/// ended (``ImageCacheProtocol/missEnded(forKey:cacheType:outcome:)``, a fleet lease).
///
/// Ownership makes "every lease ends" hold by construction: the load's operation holds its claims until it joins a
/// job; the job holds them until it settles (every subscriber served or gone, every store finished) and then ends
/// each one with the outcome it saw; a load that ends before joining a job (cancelled during a query, refused a
/// download) ends its claims as ``CacheMissOutcome/abandoned``.
struct MissClaim: Sendable {
    let cache: any ImageCacheProtocol
    let key: String
    let levels: ImageCacheType

    /// Tells the cache; called once per claim, never under a lock.
    func end(_ outcome: CacheMissOutcome) {
        cache.missEnded(forKey: key, cacheType: levels, outcome: outcome)
    }
}
