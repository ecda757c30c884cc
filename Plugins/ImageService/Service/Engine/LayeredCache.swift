import DiskCache
import Foundation
import ImageCore
import RedisCache

/// One kind of cached bytes (results or sources) on up to three levels: memory, the local disk, and a Redis shared
/// by the fleet. Levels are asked one at a time, fastest first, so each hit is counted at the level that had it.
///
/// A disk hit is copied to memory; a Redis hit to memory and to the local disk (one RedisCache serves both
/// kinds, so it is not given a level to promote to). With fleet coalescing, a Redis miss means this process now
/// holds the fleet's lease on the key: the work must end with ``store(_:forKey:)`` or
/// ``missEnded(_:outcome:)``, or other replicas wait until the lease expires.
///
/// Thread-safe; the SDK caches answer on their own queues.
struct LayeredCache: Sendable {
    /// A hit.
    struct Hit: Sendable {
        let entry: BytesMemoryCache.Entry
        let level: CacheLevel
    }

    let kind: CacheKind
    let memory: BytesMemoryCache
    let disk: DiskCache?
    let redis: RedisCache?
    let metrics: ServiceMetrics

    /// The memory level alone, on the caller's thread (counted as a hit when found; a miss is not counted: the
    /// lookup goes on at the lower levels).
    func memoryHit(_ key: String) -> Hit? {
        guard let entry = memory.entry(forKey: key) else { return nil }
        metrics.cacheHit(kind: kind, level: .memory)
        return Hit(entry: entry, level: .memory)
    }

    /// Memory, then disk, then Redis (``memoryHit(_:)`` first unless `skipMemory`).
    func lookup(_ key: String, skipMemory: Bool = false, includeRedis: Bool = true) async -> Hit? {
        if !skipMemory, let hit = memoryHit(key) { return hit }
        for (level, cache) in [
            (CacheLevel.disk, disk as (any ImageCacheProtocol)?), (.redis, includeRedis ? redis : nil),
        ] {
            guard let cache,
                // Claiming: a Redis miss takes the fleet lease, which `missEnded` (or the store) ends.
                let found = try? await cache.queryImageClaimingMiss(
                    forKey: key, options: [], context: ImageContext(), cacheType: .disk),
                let data = found.data
            else { continue }
            let entry = BytesMemoryCache.Entry(
                data: data, metadata: found.metadata ?? CacheEntryMetadata(originalKey: key))
            memory.set(entry, forKey: key)
            if level == .redis {
                disk?.store(nil, data: data, metadata: entry.metadata, forKey: key, cacheType: .disk, completion: nil)
            }
            metrics.cacheHit(kind: kind, level: level)
            return Hit(entry: entry, level: level)
        }
        metrics.cacheMiss(kind: kind)
        return nil
    }

    /// Stores `entry` on every level (memory at once; disk and Redis written in the background, in order).
    func store(_ entry: BytesMemoryCache.Entry, forKey key: String) {
        memory.set(entry, forKey: key)
        disk?.store(nil, data: entry.data, metadata: entry.metadata, forKey: key, cacheType: .disk, completion: nil)
        redis?.store(nil, data: entry.data, metadata: entry.metadata, forKey: key, cacheType: .disk, completion: nil)
    }

    /// Ends a lookup that missed without a store, so replicas waiting on this process's fleet lease stop waiting:
    /// `notStored` when nothing will be stored however often it is tried (the source said `no-store`, 404, too
    /// large, undecodable, refused by the policy), `abandoned` when another replica may succeed (a timeout, a 5xx,
    /// the queue was full).
    func missEnded(_ key: String, outcome: CacheMissOutcome) {
        redis?.missEnded(forKey: key, cacheType: .disk, outcome: outcome)
    }
}
