import Foundation
import ImageCore
import Synchronization

/// A least-recently-used cache of encoded bytes and their metadata, bounded by a byte budget.
///
/// The SDK's `MemoryCache` keeps decoded images; the server keeps encoded ones (a result hit is served as stored,
/// with no decode and no encode; a source hit is decoded at the thumbnail's size, never at full size), so this
/// level counts the bytes it holds. An entry larger than an eighth of the budget is not kept: one huge source must
/// not flush everything else. A budget of 0 keeps nothing.
///
/// Thread-safe: one `Mutex`; evicted entries are released after it.
final class BytesMemoryCache: Sendable {
    /// What is stored under a key.
    struct Entry: Sendable {
        let data: Data
        let metadata: CacheEntryMetadata
    }

    private struct Node {
        var key: String
        var entry: Entry
        var previous: Int?
        var next: Int?
    }

    private struct State {
        var index: [String: Int] = [:]
        var nodes: [Node?] = []
        var free: [Int] = []
        var head: Int?  // most recent
        var tail: Int?  // least recent
        var bytes = 0
    }

    /// The byte budget.
    let limit: Int
    private let state = Mutex(State())

    /// Creates a cache holding at most `limit` bytes.
    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Bytes held now.
    var totalBytes: Int { state.withLock { $0.bytes } }

    /// Entries held now.
    var count: Int { state.withLock { $0.index.count } }

    /// The entry for `key`, which becomes the most recently used.
    func entry(forKey key: String) -> Entry? {
        state.withLock { state in
            guard let slot = state.index[key] else { return nil }
            Self.unlink(slot, &state)
            Self.pushFront(slot, &state)
            return state.nodes[slot]!.entry
        }
    }

    /// Stores `entry` under `key`, evicting the least recently used entries over the budget.
    func set(_ entry: Entry, forKey key: String) {
        let cost = entry.data.count
        guard limit > 0, cost <= limit / 8 else { return }
        var evicted: [Entry] = []
        state.withLock { state in
            if let slot = state.index[key] {
                state.bytes -= state.nodes[slot]!.entry.data.count
                evicted.append(state.nodes[slot]!.entry)
                state.nodes[slot]!.entry = entry
                Self.unlink(slot, &state)
                Self.pushFront(slot, &state)
            } else {
                let node = Node(key: key, entry: entry)
                let slot: Int
                if let reused = state.free.popLast() {
                    slot = reused
                    state.nodes[slot] = node
                } else {
                    slot = state.nodes.count
                    state.nodes.append(node)
                }
                state.index[key] = slot
                Self.pushFront(slot, &state)
            }
            state.bytes += cost
            while state.bytes > limit, let last = state.tail {
                let node = state.nodes[last]!
                Self.unlink(last, &state)
                state.index[node.key] = nil
                state.nodes[last] = nil
                state.free.append(last)
                state.bytes -= node.entry.data.count
                evicted.append(node.entry)
            }
        }
        _ = evicted  // released here, after the lock
    }

    private static func unlink(_ slot: Int, _ state: inout State) {
        let node = state.nodes[slot]!
        if let previous = node.previous { state.nodes[previous]!.next = node.next } else { state.head = node.next }
        if let next = node.next { state.nodes[next]!.previous = node.previous } else { state.tail = node.previous }
        state.nodes[slot]!.previous = nil
        state.nodes[slot]!.next = nil
    }

    private static func pushFront(_ slot: Int, _ state: inout State) {
        state.nodes[slot]!.next = state.head
        if let head = state.head { state.nodes[head]!.previous = slot }
        state.head = slot
        if state.tail == nil { state.tail = slot }
    }
}
