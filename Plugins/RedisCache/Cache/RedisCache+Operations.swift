import Foundation
import ImageCore
import NIOCore

/// The cache's operations as async functions that never throw: every failure is a miss (or a skipped store),
/// already logged and counted by ``RedisCache/guarded(_:_:)``.
extension RedisCache {
    /// Where a query's answer came from (tests and metrics).
    enum Lookup: Sendable {
        /// The entry was there.
        case hit(data: Data, metadata: CacheEntryMetadata)
        /// Not there; this process should fetch it (it holds the lease, or coalescing is off).
        case miss
    }

    func keys(for key: String) -> RedisKeys { RedisKeys(prefix: configuration.keyPrefix, key: key) }

    /// Reads the entry for `key`; with fleet coalescing, a miss may wait for another process's fetch.
    func lookup(_ key: String, options: ImageOptions) async -> Lookup {
        let keys = keys(for: key)
        let start = clock()
        let reply = await guarded("GET") { () async throws(RedisClientError) in
            try Self.check(try await executor.send([.get(keys.entry)], routingKey: keys.entry).first ?? .null)
        }
        guard let reply else { return .miss }
        metrics.queryDuration.recordNanoseconds(Int64((clock() - start) * 1e9))
        if let hit = entry(from: reply, key: key) { return hit }
        metrics.misses.increment()
        guard let coalescing = configuration.fleetCoalescing, !options.contains(.fromCacheOnly) else { return .miss }
        return await coalesce(key, keys: keys, settings: coalescing)
    }

    /// The hit in a `GET` reply, counting it; nil for nil or a corrupt entry.
    func entry(from reply: RESPValue, key: String) -> Lookup? {
        guard case .bulkString(let buffer) = reply else { return nil }
        guard let (data, metadata) = RedisEntryCodec.decode(buffer, key: key) else {
            metrics.recordError("corrupt")
            logger.warning("Redis entry does not decode; treated as a miss", metadata: ["key": "\(key)"])
            return nil
        }
        metrics.hits.increment()
        metrics.bytesRead.increment(by: Int64(buffer.readableBytes))
        return .hit(data: data, metadata: metadata)
    }

    /// Writes the entry for `key` (and releases this fleet's lease on it). False when skipped or failed.
    @discardableResult
    func put(_ data: Data, metadata: CacheEntryMetadata?, forKey key: String) async -> Bool {
        var stored = metadata ?? CacheEntryMetadata()
        stored.originalKey = key
        stored.size = data.count
        if stored.storedAt == nil { stored.storedAt = Date() }
        stored.lastAccess = nil
        let value = RedisEntryCodec.encode(data: data, metadata: stored)
        guard value.readableBytes <= configuration.maxEntryBytes else {
            metrics.oversize.increment()
            return false
        }
        let keys = keys(for: key)
        let ttl = configuration.entryTTL.map { Int64(max(1, $0 * 1000)) }
        var commands: [RedisCommand] = [.set(keys.entry, value, milliseconds: ttl)]
        // A stored entry ends every wait for it, so the lease can go whoever holds it now.
        if configuration.fleetCoalescing != nil { commands.append(.del([keys.lease])) }
        let replies = await guarded("SET") { () async throws(RedisClientError) in
            let replies = try await executor.send(commands, routingKey: keys.entry)
            _ = try Self.check(replies.first ?? .null)
            return replies
        }
        guard replies != nil else { return false }
        metrics.stores.increment()
        metrics.bytesWritten.increment(by: Int64(value.readableBytes))
        return true
    }

    /// Deletes the entry (and its lease).
    func delete(_ key: String) async {
        let keys = keys(for: key)
        _ = await guarded("DEL") { () async throws(RedisClientError) in
            try Self.check(
                try await executor.send([.del([keys.entry, keys.lease])], routingKey: keys.entry).first ?? .null)
        }
    }

    /// True when an entry exists.
    func exists(_ key: String) async -> Bool {
        let keys = keys(for: key)
        let reply = await guarded("EXISTS") { () async throws(RedisClientError) in
            try Self.check(
                try await executor.send([RedisCommand(["EXISTS", keys.entry])], routingKey: keys.entry).first ?? .null)
        }
        return (reply?.int ?? 0) > 0
    }

    /// Removes every key with this cache's prefix, node by node, with `SCAN` and `UNLINK` (never `FLUSHDB`: other
    /// data may share the database).
    func removeAll() async {
        let pattern = Self.globEscaped(configuration.keyPrefix) + "*"
        _ = await guarded("SCAN") { () async throws(RedisClientError) in
            for endpoint in try await executor.primaries() {
                var cursor = "0"
                repeat {
                    let reply = try Self.check(
                        try await executor.send(
                            RedisCommand(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"]), to: endpoint))
                    guard let parts = reply.elements, parts.count == 2, let next = parts[0].string,
                        let found = parts[1].elements
                    else { throw RedisClientError(.protocolViolation, "SCAN reply") }
                    cursor = next
                    let keys = found.compactMap(\.string)
                    if executor.isCluster {
                        // Keys of different slots cannot share one command in a cluster.
                        for key in keys {
                            _ = try await executor.send([RedisCommand(["UNLINK", key])], routingKey: key)
                        }
                    } else if !keys.isEmpty {
                        _ = try Self.check(try await executor.send(RedisCommand(["UNLINK"] + keys), to: endpoint))
                    }
                } while cursor != "0"
            }
            return true
        }
    }

    static func globEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if "*?[]\\".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}
