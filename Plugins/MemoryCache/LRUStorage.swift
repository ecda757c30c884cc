import Foundation
import ImageCore

/// Bytes and metadata kept beside an image; boxed so the common entry (image only) stays small.
final class MemoryEntryExtras: Sendable {
    let data: Data?
    let metadata: CacheEntryMetadata?

    init(data: Data?, metadata: CacheEntryMetadata?) {
        self.data = data
        self.metadata = metadata
    }
}

/// The limits a ``MemoryCache`` enforces now; kept with the entries, under the same lock, so a change and the
/// eviction it causes happen together.
struct MemoryCacheLimits: Equatable {
    var cost: Int
    var count: Int
    var maxEntryCost: Int

    /// The largest entry admitted: never more than the cost limit.
    var effectiveMaxEntryCost: Int { min(maxEntryCost, cost) }
}

/// A weak reference to an evicted image, for the weak table.
struct WeakImage {
    weak var image: Image?
    let extras: MemoryEntryExtras?
    let cost: Int
    let expiry: UInt64
}

/// The state of a ``MemoryCache``: a dictionary from key to slot plus an intrusive doubly linked list threaded
/// through an array of slots (no node objects, so a hit retains nothing but the image it returns).
///
/// Not thread-safe by itself: ``MemoryCache`` keeps it inside a `Mutex`. Methods that drop images return them,
/// so the caller releases them after unlocking (an image's deinit may run user code, e.g. an animation provider).
struct LRUStorage {
    struct Slot {
        var key: String
        var image: Image?
        var extras: MemoryEntryExtras?
        var cost: Int
        /// Monotonic nanoseconds after which the entry is stale; `UInt64.max` for never.
        var expiry: UInt64
        var prev: Int
        var next: Int
    }

    /// The cost, count and entry limits in force.
    var limits: MemoryCacheLimits
    private(set) var index: [String: Int] = [:]
    private(set) var slots: ContiguousArray<Slot> = []
    private var freeSlots: [Int] = []
    /// Most recently used slot, or -1.
    private(set) var head = -1
    /// Least recently used slot, or -1.
    private(set) var tail = -1
    private(set) var totalCost = 0
    /// Evicted images that may still be alive (only used when the weak table is on).
    private var weakTable: [String: WeakImage] = [:]
    /// Weak-table size after the last prune; the next prune happens when it doubles.
    private var weakPruneThreshold = 64

    var count: Int { index.count }

    init(limits: MemoryCacheLimits) { self.limits = limits }

    // MARK: Lookup

    /// The live entry for `key` (an image, bytes alone, or both), marked most recently used; stale entries are
    /// removed into `dropped`.
    mutating func lookup(_ key: String, now: UInt64, dropped: inout [AnyObject]) -> (Image?, MemoryEntryExtras?)? {
        guard let position = index[key] else { return nil }
        if slots[position].expiry <= now {
            if let held = remove(at: position) { dropped.append(held) }
            return nil
        }
        moveToFront(position)
        if let image = slots[position].image { return (image, slots[position].extras) }
        guard let extras = slots[position].extras, extras.data != nil else { return nil }
        return (nil, extras)
    }

    /// True when `key` has a live entry; does not change the order.
    func containsLive(_ key: String, now: UInt64) -> Bool {
        guard let position = index[key] else { return false }
        return slots[position].expiry > now
    }

    /// An evicted image for `key` that is still alive elsewhere and not stale, removed from the weak table.
    mutating func takeFromWeakTable(_ key: String, now: UInt64) -> (image: Image, entry: WeakImage)? {
        guard let entry = weakTable.removeValue(forKey: key) else { return nil }
        guard entry.expiry > now, let image = entry.image else { return nil }
        return (image, entry)
    }

    // MARK: Mutation

    /// Inserts or replaces `key` (a nil `image` is an entry of bytes alone, in `extras`); what the replaced entry
    /// held goes to `dropped`.
    mutating func insert(
        _ key: String, image: Image?, extras: MemoryEntryExtras?, cost: Int, expiry: UInt64, dropped: inout [AnyObject]
    ) {
        weakTable.removeValue(forKey: key)
        if let position = index[key] {
            if let old = slots[position].image { dropped.append(old) }
            if let old = slots[position].extras { dropped.append(old) }
            totalCost += cost - slots[position].cost
            slots[position].image = image
            slots[position].extras = extras
            slots[position].cost = cost
            slots[position].expiry = expiry
            moveToFront(position)
            return
        }
        let slot = Slot(key: key, image: image, extras: extras, cost: cost, expiry: expiry, prev: -1, next: -1)
        let position: Int
        if let reused = freeSlots.popLast() {
            position = reused
            slots[position] = slot
        } else {
            position = slots.count
            slots.append(slot)
        }
        index[key] = position
        totalCost += cost
        linkAtFront(position)
    }

    /// Removes `key` from the list and the weak table; returns what it held (see ``remove(at:)``).
    mutating func remove(_ key: String) -> AnyObject? {
        weakTable.removeValue(forKey: key)
        guard let position = index[key] else { return nil }
        return remove(at: position)
    }

    /// Evicts least recently used entries until both limits hold; images go to `dropped` (and to the weak table
    /// when `keepWeak`).
    mutating func evict(toCost costLimit: Int, toCount countLimit: Int, keepWeak: Bool, dropped: inout [AnyObject]) {
        while tail >= 0 && (totalCost > costLimit || index.count > countLimit) {
            let position = tail
            let key = slots[position].key
            let extras = slots[position].extras
            let cost = slots[position].cost
            let expiry = slots[position].expiry
            let image = slots[position].image
            guard let removed = remove(at: position) else { continue }
            if keepWeak, let image {
                remember(key, WeakImage(image: image, extras: extras, cost: cost, expiry: expiry))
            }
            dropped.append(removed)
        }
    }

    /// Evicts least recently used entries until the limits in force hold.
    mutating func evictToLimits(keepWeak: Bool, dropped: inout [AnyObject]) {
        evict(toCost: limits.cost, toCount: limits.count, keepWeak: keepWeak, dropped: &dropped)
    }

    /// Removes every stale entry; what they held goes to `dropped`.
    mutating func removeExpired(now: UInt64, dropped: inout [AnyObject]) {
        var position = tail
        while position >= 0 {
            let previous = slots[position].prev
            if slots[position].expiry <= now, let held = remove(at: position) { dropped.append(held) }
            position = previous
        }
    }

    /// Empties everything; returns the old slots so the caller frees them after unlocking.
    mutating func removeAll() -> ContiguousArray<Slot> {
        let old = slots
        index = [:]
        slots = []
        freeSlots = []
        head = -1
        tail = -1
        totalCost = 0
        weakTable = [:]
        return old
    }

    // MARK: List plumbing

    /// Unlinks the slot and returns what it held, for the caller to release after unlocking: the image, or for an
    /// entry of bytes alone their box (a 16 MB buffer is not freed under the lock either).
    private mutating func remove(at position: Int) -> AnyObject? {
        unlink(position)
        index.removeValue(forKey: slots[position].key)
        totalCost -= slots[position].cost
        let held: AnyObject? = slots[position].image ?? slots[position].extras
        slots[position].image = nil
        slots[position].extras = nil
        slots[position].key = ""
        slots[position].cost = 0
        freeSlots.append(position)
        return held
    }

    private mutating func remember(_ key: String, _ entry: WeakImage) {
        weakTable[key] = entry
        if weakTable.count >= weakPruneThreshold {
            // Dead references pile up as evicted images die; drop them once the table doubled since last time.
            weakTable = weakTable.filter { $0.value.image != nil }
            weakPruneThreshold = max(64, weakTable.count * 2)
        }
    }

    private mutating func moveToFront(_ position: Int) {
        guard head != position else { return }
        unlink(position)
        linkAtFront(position)
    }

    private mutating func linkAtFront(_ position: Int) {
        slots[position].prev = -1
        slots[position].next = head
        if head >= 0 { slots[head].prev = position }
        head = position
        if tail < 0 { tail = position }
    }

    private mutating func unlink(_ position: Int) {
        let prev = slots[position].prev
        let next = slots[position].next
        if prev >= 0 { slots[prev].next = next } else { head = next }
        if next >= 0 { slots[next].prev = prev } else { tail = prev }
        slots[position].prev = -1
        slots[position].next = -1
    }

    // MARK: Checks (tests)

    /// Keys from most to least recently used.
    func keysInOrder() -> [String] {
        var keys: [String] = []
        var position = head
        while position >= 0 {
            keys.append(slots[position].key)
            position = slots[position].next
        }
        return keys
    }

    /// True when the list, the index and the cost total agree.
    func isConsistent() -> Bool {
        var seen = 0
        var cost = 0
        var position = head
        var previous = -1
        while position >= 0 {
            guard seen <= slots.count, slots[position].prev == previous, index[slots[position].key] == position
            else { return false }
            seen += 1
            cost += slots[position].cost
            previous = position
            position = slots[position].next
        }
        return previous == tail && seen == index.count && cost == totalCost
    }

    /// Number of weak-table entries (dead or alive).
    var weakTableCount: Int { weakTable.count }
}
