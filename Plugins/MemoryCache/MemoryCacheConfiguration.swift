import Foundation

/// Limits and switches of a ``MemoryCache``.
///
/// The defaults are safe for a server: the cost limit is derived from the memory the process may use (see
/// ``defaultCostLimit``), a single image larger than a quarter of that limit is not cached, there is no count
/// limit, no time-to-live, no weak table and no byte copies.
public struct MemoryCacheConfiguration: Sendable, Hashable {
    /// Share of the process memory limit that the default cost limit takes: 20 %.
    public static let defaultMemoryFraction = 0.2
    /// Upper bound of the default cost limit: 1 GiB.
    public static let defaultCostLimitCap = 1 << 30

    /// Total cost (bytes of decoded pixels, plus stored bytes when ``keepsData``, and the bytes of entries of bytes
    /// alone) the cache holds at most.
    public var costLimit: Int
    /// Number of entries the cache holds at most; `Int.max` means no count limit.
    public var countLimit: Int
    /// Largest cost of one entry; a larger image is not stored (so one huge image cannot flush the cache).
    /// Never more than ``costLimit`` in effect.
    public var maxEntryCost: Int
    /// How long an entry may be served after it was stored; nil means entries never expire.
    public var timeToLive: Duration?
    /// Keep a weak reference to evicted images and serve them while something else still holds them
    /// (SDWebImage's `shouldUseWeakMemoryCache`). Costs one weak reference per evicted entry.
    public var shouldUseWeakMemoryCache: Bool
    /// Keep the bytes passed to `store` beside the image, for ``/ImageCore/ImageOptions/queryMemoryData``.
    /// Off by default: a server keeps bytes on disk, and keeping them here roughly doubles the memory per entry.
    /// When on, the bytes count towards the entry's cost.
    public var keepsData: Bool
    /// Keep bytes stored without an image (`store(nil, data:…)` through ``/ImageCore/ImageCacheProtocol``, as a
    /// `CachesManager` does when it promotes a lower level's hit) as an entry of bytes alone, costing its bytes.
    /// For a cache whose product is encoded bytes (a thumbnail service's results and sources); off by default,
    /// where an image cache ignores such stores. ``MemoryCache/setData(_:metadata:forKey:)`` stores bytes either way.
    /// Set it on a configuration made by the initializer.
    public var keepsDataAlone: Bool

    /// Creates a configuration; omitted values take the defaults described on the type.
    public init(
        costLimit: Int = MemoryCacheConfiguration.defaultCostLimit, countLimit: Int = .max,
        maxEntryCost: Int? = nil, timeToLive: Duration? = nil, shouldUseWeakMemoryCache: Bool = false,
        keepsData: Bool = false
    ) {
        self.costLimit = max(0, costLimit)
        self.countLimit = max(0, countLimit)
        self.maxEntryCost = max(0, maxEntryCost ?? costLimit / 4)
        self.timeToLive = timeToLive
        self.shouldUseWeakMemoryCache = shouldUseWeakMemoryCache
        self.keepsData = keepsData
        self.keepsDataAlone = false
    }

    /// The default configuration.
    public static var `default`: MemoryCacheConfiguration { MemoryCacheConfiguration() }

    /// The default cost limit: 20 % of ``processMemoryLimit``, capped at 1 GiB.
    public static let defaultCostLimit: Int = defaultCostLimit(forMemoryLimit: processMemoryLimit)

    /// The default cost limit for a process that may use `memoryLimit` bytes.
    public static func defaultCostLimit(forMemoryLimit memoryLimit: UInt64) -> Int {
        let share = Double(memoryLimit) * defaultMemoryFraction
        return share >= Double(defaultCostLimitCap) ? defaultCostLimitCap : Int(share)
    }

    /// Bytes of memory this process may use: the limit of its own control group (cgroup v2 `memory.max` or
    /// v1 `memory.limit_in_bytes` of the group named in `/proc/self/cgroup` and its ancestors, the smallest
    /// wins), never more than the physical memory; the physical memory when no group sets a limit.
    ///
    /// So a service under systemd `MemoryMax=` or in a container with a memory limit is sized from that limit.
    /// Read from the file system on each call; cheap, but not meant for a hot path.
    public static var processMemoryLimit: UInt64 {
        SystemMemory.limit(cgroup: CgroupMemoryLimit().limit(), physical: ProcessInfo.processInfo.physicalMemory)
    }
}

/// Combines the cgroup limit with the physical memory.
enum SystemMemory {
    /// The effective limit: the cgroup limit bounded by `physical`, or `physical` when there is none.
    static func limit(cgroup: UInt64?, physical: UInt64) -> UInt64 {
        guard let cgroup else { return physical }
        return physical > 0 ? min(cgroup, physical) : cgroup
    }
}
