import DiskCache
import Foundation
import ImageCore
import MemoryCache
import RedisCache

/// One kind of cached bytes (results or sources) on the SDK's caches: a `CachesManager` over a `MemoryCache` of
/// bytes, the local `DiskCache` and a fleet's `RedisCache`, asked one at a time, fastest first.
///
/// The layering is the SDK's: the manager stops at the first hit, names the cache that answered (so each hit is
/// counted at its level) and copies a lower level's hit to the levels above it (`promotesHits`: a disk hit to
/// memory, a Redis hit to memory and disk). The loads over it (``PipelineEngine``'s managers) claim a fleet's lease
/// on a miss and end it. What this type adds is the service's bookkeeping: the level names and the memory-hit
/// counter.
///
/// Thread-safe; the SDK caches answer on their own queues.
struct ServiceCache: Sendable {
    /// A hit: the stored bytes, their metadata, and the level that had them.
    struct Hit: Sendable {
        let data: Data
        let metadata: CacheEntryMetadata
        let level: CacheLevel
    }

    let kind: CacheKind
    let memory: MemoryCache
    private let levels: [CacheLevel]
    /// The levels as one cache, fastest first (what the source loads' manager runs on).
    let caches: CachesManager
    private let metrics: ServiceMetrics

    /// Caches `kind` on `memoryBytes` of memory (an entry above an eighth of it is not kept: one huge source must
    /// not flush everything else; 0 keeps nothing), then `disk` and `redis` when given.
    init(kind: CacheKind, memoryBytes: Int, disk: DiskCache?, redis: RedisCache?, metrics: ServiceMetrics) {
        let budget = max(0, memoryBytes)
        var configuration = MemoryCacheConfiguration(costLimit: budget, maxEntryCost: budget / 8)
        configuration.keepsDataAlone = true
        memory = MemoryCache(configuration: configuration)
        var levels: [CacheLevel] = [.memory]
        var caches: [any ImageCacheProtocol] = [memory]
        if let disk {
            levels.append(.disk)
            caches.append(disk)
        }
        if let redis {
            levels.append(.redis)
            caches.append(redis)
        }
        self.caches = CachesManager(caches)
        self.caches.promotesHits = true
        self.kind = kind
        self.levels = levels
        self.metrics = metrics
    }

    /// The memory level alone, on the caller's thread (counted as a hit when found; a miss is not counted: the
    /// lookup goes on at the lower levels).
    func memoryHit(_ key: String) -> Hit? {
        guard let (data, metadata) = memory.data(forKey: key) else { return nil }
        metrics.cacheHit(kind: kind, level: .memory)
        return Hit(data: data, metadata: metadata ?? CacheEntryMetadata(originalKey: key), level: .memory)
    }

    /// The level a load's hit came from: the cache at `answeredBy` in ``caches``, else by `cacheType`; nil for none.
    func level(answeredBy: Int?, cacheType: ImageCacheType) -> CacheLevel? {
        if let answeredBy, levels.indices.contains(answeredBy) { return levels[answeredBy] }
        if cacheType.contains(.memory) { return .memory }
        return cacheType.contains(.disk) ? levels.dropFirst().first : nil
    }

    /// Stores `data` on every level (memory at once; disk and Redis written in the background).
    func store(_ data: Data, metadata: CacheEntryMetadata, forKey key: String) {
        caches.store(nil, data: data, metadata: metadata, forKey: key, cacheType: .all, completion: nil)
    }

    /// Removes `key` from every level (memory at once; disk and Redis in the background).
    func remove(_ key: String) {
        caches.removeImage(forKey: key, cacheType: .all, completion: nil)
    }
}
