import Dispatch
import Foundation
import ImageCore
import Synchronization

/// An in-memory cache of decoded images with LRU eviction, cost and count limits, an optional time-to-live and
/// an optional weak table; the memory level of SDWebImage's `SDImageCache`.
///
/// Cost of an entry is ``/ImageCore/Image/memoryCost`` (plus the stored bytes when
/// ``MemoryCacheConfiguration/keepsData``); an entry of bytes alone (``setData(_:metadata:forKey:)``, a service's
/// encoded results and sources) costs its bytes. Every operation is O(1) except trims, which are O(evicted).
///
/// The cost and count limits can be changed while the cache runs (``costLimit``, ``countLimit``,
/// ``maxEntryCost``, ``setCostLimit(forMemoryLimit:)``); lowering one evicts down to it before the setter returns.
///
/// Threading: thread-safe and synchronous. Every method, including the ``/ImageCore/ImageCacheProtocol``
/// ones, answers on the caller's thread before returning. The state sits behind one `Mutex` held only for
/// dictionary and list updates: completions run after it is released, and evicted images are released after
/// it is released too (an image's deinit may run an animation provider's code).
///
/// The fast entry points (for benchmarks and direct use) are ``image(forKey:)`` and
/// ``setImage(_:forKey:data:metadata:)``.
public final class MemoryCache: ImageCacheProtocol, Sendable {
    /// A process-wide cache with the default configuration.
    public static let shared = MemoryCache()

    /// The configuration this cache was created with, with the cost, count and entry limits in force now.
    public var configuration: MemoryCacheConfiguration {
        let limits = state.withLock { $0.limits }
        var current = initialConfiguration
        current.costLimit = limits.cost
        current.countLimit = limits.count
        current.maxEntryCost = limits.maxEntryCost
        return current
    }

    private let initialConfiguration: MemoryCacheConfiguration
    private let state: Mutex<LRUStorage>
    private let ttlNanoseconds: UInt64?
    /// Monotonic nanoseconds; replaceable so tests can move time.
    private let clock: @Sendable () -> UInt64

    /// Creates a cache with `configuration`.
    public convenience init(configuration: MemoryCacheConfiguration = .default) {
        self.init(configuration: configuration, clock: { DispatchTime.now().uptimeNanoseconds })
    }

    /// Creates a cache with a custom monotonic clock (tests).
    init(configuration: MemoryCacheConfiguration, clock: @escaping @Sendable () -> UInt64) {
        initialConfiguration = configuration
        state = Mutex(
            LRUStorage(
                limits: MemoryCacheLimits(
                    cost: configuration.costLimit, count: configuration.countLimit,
                    maxEntryCost: configuration.maxEntryCost)))
        self.ttlNanoseconds = configuration.timeToLive.map { ttl in
            let (seconds, attoseconds) = ttl.components
            guard seconds >= 0 else { return 0 }
            let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
            return overflow ? .max : whole &+ UInt64(attoseconds / 1_000_000_000)
        }
        self.clock = clock
    }

    // MARK: Direct API

    /// The image for `key`, or nil; a hit becomes the most recently used entry. An entry of bytes alone
    /// (``setData(_:metadata:forKey:)``) has no image: nil.
    public func image(forKey key: String) -> Image? { lookup(key)?.image }

    /// The image, kept bytes and metadata for `key`, or nil; a hit becomes the most recently used entry. An entry
    /// of bytes alone has no image: nil (see ``data(forKey:)``).
    ///
    /// With the weak table on, an evicted image that is still alive elsewhere is found and put back.
    public func entry(forKey key: String) -> (image: Image, data: Data?, metadata: CacheEntryMetadata?)? {
        guard let (image, extras) = lookup(key), let image else { return nil }
        return (image, extras?.data, extras?.metadata)
    }

    /// The bytes kept for `key` and their metadata, or nil; a hit becomes the most recently used entry.
    ///
    /// Finds an entry of bytes alone (``setData(_:metadata:forKey:)``) and the bytes kept beside an image (with
    /// ``MemoryCacheConfiguration/keepsData``).
    public func data(forKey key: String) -> (data: Data, metadata: CacheEntryMetadata?)? {
        guard let (_, extras) = lookup(key), let extras, let data = extras.data else { return nil }
        return (data, extras.metadata)
    }

    private func lookup(_ key: String) -> (image: Image?, extras: MemoryEntryExtras?)? {
        let now = ttlNanoseconds == nil ? 0 : clock()
        let useWeak = initialConfiguration.shouldUseWeakMemoryCache
        var dropped: [AnyObject] = []
        let found = state.withLock { storage -> (Image?, MemoryEntryExtras?)? in
            if let hit = storage.lookup(key, now: now, dropped: &dropped) { return hit }
            guard useWeak, let revived = storage.takeFromWeakTable(key, now: now) else { return nil }
            storage.insert(
                key, image: revived.image, extras: revived.entry.extras, cost: revived.entry.cost,
                expiry: revived.entry.expiry, dropped: &dropped)
            storage.evictToLimits(keepWeak: true, dropped: &dropped)
            return (revived.image, revived.entry.extras)
        }
        withExtendedLifetime(dropped) {}
        return found
    }

    /// Stores `image` under `key`, evicting least recently used entries to stay within the limits.
    ///
    /// `data` is kept only when ``MemoryCacheConfiguration/keepsData``. An image whose cost exceeds
    /// ``maxEntryCost`` (or ``costLimit``) is not stored and removes any older entry for `key`.
    /// - Returns: false when the image was refused by the per-entry cap.
    @discardableResult
    public func setImage(
        _ image: Image, forKey key: String, data: Data? = nil, metadata: CacheEntryMetadata? = nil
    ) -> Bool {
        let keptData = initialConfiguration.keepsData ? data : nil
        let extras = keptData == nil && metadata == nil ? nil : MemoryEntryExtras(data: keptData, metadata: metadata)
        return insert(key, image: image, extras: extras, cost: image.memoryCost + (keptData?.count ?? 0))
    }

    /// Stores `data` and its metadata under `key` as an entry of bytes alone, with no image: what a service
    /// keeps when its product is encoded bytes (a thumbnail served as stored, a source decoded only at the size
    /// asked), so a hit costs no decode and no encode. Evicts like ``setImage(_:forKey:data:metadata:)``.
    ///
    /// The entry costs `data.count` and is kept whatever ``MemoryCacheConfiguration/keepsData`` says (the bytes
    /// are the entry). An entry costlier than ``maxEntryCost`` is not stored and removes any older entry for `key`.
    /// Found by ``data(forKey:)`` and the ``/ImageCore/ImageCacheProtocol`` queries (a result with no image).
    /// - Returns: false when the bytes were refused by the per-entry cap.
    @discardableResult
    public func setData(_ data: Data, metadata: CacheEntryMetadata? = nil, forKey key: String) -> Bool {
        insert(key, image: nil, extras: MemoryEntryExtras(data: data, metadata: metadata), cost: data.count)
    }

    private func insert(_ key: String, image: Image?, extras: MemoryEntryExtras?, cost: Int) -> Bool {
        var dropped: [AnyObject] = []
        defer { withExtendedLifetime(dropped) {} }
        let expiry: UInt64
        if let ttlNanoseconds {
            let (sum, overflow) = clock().addingReportingOverflow(ttlNanoseconds)
            expiry = overflow ? .max : sum
        } else {
            expiry = .max
        }
        let keepWeak = initialConfiguration.shouldUseWeakMemoryCache
        return state.withLock { storage in
            guard cost <= storage.limits.effectiveMaxEntryCost else {
                if let old = storage.remove(key) { dropped.append(old) }
                return false
            }
            storage.insert(key, image: image, extras: extras, cost: cost, expiry: expiry, dropped: &dropped)
            storage.evictToLimits(keepWeak: keepWeak, dropped: &dropped)
            return true
        }
    }

    // MARK: Limits at run time

    /// Total cost the cache holds at most (SDWebImage's `SDImageCacheConfig.maxMemoryCost`, `NSCache`'s
    /// `totalCostLimit`); starts as ``MemoryCacheConfiguration/costLimit``.
    ///
    /// Setting it applies at once: a lower limit evicts least recently used entries down to it before the setter
    /// returns (evicted images go to the weak table when it is on). ``maxEntryCost`` is not changed, but an entry
    /// is never admitted above the cost limit. Thread-safe; negative values mean 0.
    public var costLimit: Int {
        get { state.withLock { $0.limits.cost } }
        set { updateLimits { $0.cost = max(0, newValue) } }
    }

    /// Number of entries the cache holds at most, `Int.max` for no limit (SDWebImage's
    /// `SDImageCacheConfig.maxMemoryCount`, `NSCache`'s `countLimit`); starts as
    /// ``MemoryCacheConfiguration/countLimit``.
    ///
    /// Setting it applies at once: a lower limit evicts least recently used entries down to it before the setter
    /// returns. Thread-safe; negative values mean 0.
    public var countLimit: Int {
        get { state.withLock { $0.limits.count } }
        set { updateLimits { $0.count = max(0, newValue) } }
    }

    /// Largest cost of one entry (never more than ``costLimit`` in effect); starts as
    /// ``MemoryCacheConfiguration/maxEntryCost``. Applies to later stores: entries already held stay.
    /// Thread-safe; negative values mean 0.
    public var maxEntryCost: Int {
        get { state.withLock { $0.limits.maxEntryCost } }
        set { updateLimits { $0.maxEntryCost = max(0, newValue) } }
    }

    /// Sizes the cache for a process that may now use `memoryLimit` bytes, as the default configuration would:
    /// the cost limit becomes ``MemoryCacheConfiguration/defaultCostLimit(forMemoryLimit:)`` and the largest entry
    /// a quarter of it, evicting at once when that is lower.
    ///
    /// For a service whose memory limit changes while it runs (a container resized in place, a systemd
    /// `MemoryMax=` changed with `systemctl set-property`): call it with
    /// ``MemoryCacheConfiguration/processMemoryLimit`` when told of the change, or from a periodic check.
    /// - Returns: the new cost limit.
    @discardableResult
    public func setCostLimit(forMemoryLimit memoryLimit: UInt64) -> Int {
        let cost = MemoryCacheConfiguration.defaultCostLimit(forMemoryLimit: memoryLimit)
        updateLimits {
            $0.cost = cost
            $0.maxEntryCost = cost / 4
        }
        return cost
    }

    /// Changes the limits and evicts down to them in one critical section.
    private func updateLimits(_ change: (inout MemoryCacheLimits) -> Void) {
        let keepWeak = initialConfiguration.shouldUseWeakMemoryCache
        var dropped: [AnyObject] = []
        state.withLock { storage in
            change(&storage.limits)
            storage.evictToLimits(keepWeak: keepWeak, dropped: &dropped)
        }
        withExtendedLifetime(dropped) {}
    }

    /// Removes the entry for `key` (and its weak-table entry).
    public func removeValue(forKey key: String) {
        let old = state.withLock { $0.remove(key) }
        withExtendedLifetime(old) {}
    }

    /// True when `key` has a live entry; does not count as a use.
    public func contains(_ key: String) -> Bool {
        let now = ttlNanoseconds == nil ? 0 : clock()
        return state.withLock { $0.containsLive(key, now: now) }
    }

    /// Removes every entry and empties the weak table.
    public func removeAll() {
        let old = state.withLock { $0.removeAll() }
        withExtendedLifetime(old) {}
    }

    /// Evicts least recently used entries until the total cost is at most `cost`, once (the limit stays).
    ///
    /// Evicted images go to the weak table when it is on (they are "memory pressure" evictions).
    public func trim(toCost cost: Int) {
        trim(cost: max(0, cost), count: nil)
    }

    /// Evicts least recently used entries until at most `count` remain, once (the limit stays).
    public func trim(toCount count: Int) {
        trim(cost: nil, count: max(0, count))
    }

    /// Removes every entry older than ``MemoryCacheConfiguration/timeToLive`` (stale entries are also dropped
    /// lazily when looked up).
    public func removeExpired() {
        guard ttlNanoseconds != nil else { return }
        let now = clock()
        var dropped: [AnyObject] = []
        state.withLock { $0.removeExpired(now: now, dropped: &dropped) }
        withExtendedLifetime(dropped) {}
    }

    /// Sum of the costs of the entries held.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// Number of entries held (not counting the weak table).
    public var count: Int { state.withLock { $0.count } }

    private func trim(cost: Int?, count: Int?) {
        let keepWeak = initialConfiguration.shouldUseWeakMemoryCache
        var dropped: [AnyObject] = []
        state.withLock { storage in
            storage.evict(
                toCost: min(cost ?? .max, storage.limits.cost), toCount: min(count ?? .max, storage.limits.count),
                keepWeak: keepWeak, dropped: &dropped)
        }
        withExtendedLifetime(dropped) {}
    }

    // MARK: Test hooks

    /// Keys from most to least recently used.
    var keysInLRUOrder: [String] { state.withLock { $0.keysInOrder() } }
    /// True when the internal list, index and cost total agree.
    var isConsistent: Bool { state.withLock { $0.isConsistent() } }
    /// Entries in the weak table, dead or alive.
    var weakTableCount: Int { state.withLock { $0.weakTableCount } }
}

// MARK: - ImageCacheProtocol

extension MemoryCache {
    /// Answers from memory before returning; a miss, or a `cacheType` without `.memory`, completes with nil.
    ///
    /// The result carries the image, and the kept bytes when ``MemoryCacheConfiguration/keepsData`` (so
    /// ``/ImageCore/ImageOptions/queryMemoryData`` is served from memory only then); for an entry of bytes alone
    /// (``setData(_:metadata:forKey:)``), the bytes and no image. Always returns nil.
    @discardableResult
    public func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        guard cacheType.contains(.memory), let (image, extras) = lookup(key) else {
            completion(.success(nil))
            return nil
        }
        completion(
            .success(
                CacheQueryResult(image: image, data: extras?.data, metadata: extras?.metadata, cacheType: .memory)))
        return nil
    }

    /// The same answer as ``queryImage(forKey:options:context:cacheType:completion:)``, returned instead of
    /// passed to a completion: what the manager asks first, so a memory hit allocates nothing.
    public func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult {
        guard cacheType.contains(.memory), let (image, extras) = lookup(key) else { return .miss }
        guard let extras else { return image.map { .hit(.image($0, cacheType: .memory)) } ?? .miss }
        return .hit(CacheQueryResult(image: image, data: extras.data, metadata: extras.metadata, cacheType: .memory))
    }

    /// Stores `image` when `cacheType` has `.memory` and `image` is not nil; completes before returning. Without an
    /// image, `data` is stored as an entry of bytes alone when ``MemoryCacheConfiguration/keepsDataAlone``, and
    /// nothing is stored otherwise.
    ///
    /// An entry refused by the per-entry cap is not an error (the caller keeps what it has); the completion
    /// reports success.
    public func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        if cacheType.contains(.memory) {
            if let image {
                setImage(image, forKey: key, data: data, metadata: metadata)
            } else if let data, initialConfiguration.keepsDataAlone {
                setData(data, metadata: metadata, forKey: key)
            }
        }
        completion?(.success(()))
    }

    /// Removes `key` when `cacheType` has `.memory`; completes before returning.
    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.contains(.memory) { removeValue(forKey: key) }
        completion?()
    }

    /// Reports `.memory` when `cacheType` has it and `key` is held; completes before returning.
    public func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        completion(cacheType.contains(.memory) && contains(key) ? .memory : .none)
    }

    /// Empties the cache when `cacheType` has `.memory`; completes before returning.
    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.contains(.memory) { removeAll() }
        completion?()
    }
}
