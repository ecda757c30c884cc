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
        /// Not there; this process should fetch it (coalescing is off, another load of this process holds the
        /// lease, or Redis failed).
        case miss
        /// Not there, and this query took the fleet lease: the caller owns it (it ends with a store or
        /// ``RedisCache/missEnded(forKey:cacheType:outcome:)``).
        case leased
    }

    func keys(for key: String) -> RedisKeys { RedisKeys(prefix: configuration.keyPrefix, key: key) }

    /// Reads the entry for `key`; with fleet coalescing and `claiming` (a caller that ends what its miss holds), a
    /// miss takes the lease or waits for another process's fetch. Without `claiming` no lease is ever taken.
    func lookup(_ key: String, options: ImageOptions, claiming: Bool) async -> Lookup {
        let keys = keys(for: key)
        let start = clock()
        let replies = await guarded("GET") { () async throws(RedisClientError) in
            try await executor.send(readCommands(keys), routingKey: keys.entry)
        }
        guard let replies, replies.count == 2 else { return .miss }
        metrics.queryDuration.recordNanoseconds(Int64((clock() - start) * 1e9))
        if let hit = entry(length: replies[0], prefix: replies[1], key: key) { return hit }
        metrics.misses.increment()
        guard claiming, let coalescing = configuration.fleetCoalescing, !options.contains(.fromCacheOnly) else {
            return .miss
        }
        return await coalesce(key, keys: keys, settings: coalescing)
    }

    /// `STRLEN` and `GETRANGE` of the entry: its length and at most ``RedisCacheConfiguration/entryByteLimit``
    /// bytes, so an entry larger than this reader accepts (another process's, with a larger limit) is never read
    /// whole and never makes the reply decoder refuse the connection (which would fail every command pipelined
    /// on it).
    func readCommands(_ keys: RedisKeys) -> [RedisCommand] {
        [.strlen(keys.entry), .getPrefix(keys.entry, limit: configuration.entryByteLimit)]
    }

    /// The hit in the replies of ``readCommands(_:)``, counting it; nil for an absent, oversize or corrupt entry.
    func entry(length: RESPValue, prefix: RESPValue, key: String) -> Lookup? {
        guard let stored = length.int, stored > 0 else { return nil }
        guard stored <= configuration.entryByteLimit else {
            metrics.oversize.increment()
            logger.debug(
                "Redis entry larger than this reader's maxEntryBytes; treated as a miss", metadata: ["key": "\(key)"])
            return nil
        }
        // A `SET` between the two commands can change the length: only a whole entry is one.
        guard case .bulkString(let buffer) = prefix, buffer.readableBytes == Int(stored) else { return nil }
        guard let (data, metadata) = RedisEntryCodec.decode(buffer, key: key) else {
            metrics.recordError("corrupt")
            logger.warning("Redis entry does not decode; treated as a miss", metadata: ["key": "\(key)"])
            return nil
        }
        metrics.hits.increment()
        metrics.bytesRead.increment(by: Int64(buffer.readableBytes))
        return .hit(data: data, metadata: metadata)
    }

    /// Writes the entry for `key` (and releases the fleet's lease on it). False when skipped or failed.
    ///
    /// An entry over the cap is not written; a lease this process holds for it then becomes the "nothing to
    /// share" mark, so other processes stop waiting at once.
    @discardableResult
    func put(_ data: Data, metadata: CacheEntryMetadata?, forKey key: String) async -> Bool {
        var stored = metadata ?? CacheEntryMetadata()
        stored.originalKey = key
        stored.size = data.count
        if stored.storedAt == nil { stored.storedAt = Date() }
        stored.lastAccess = nil
        let value = RedisEntryCodec.encode(data: data, metadata: stored)
        let keys = keys(for: key)
        guard value.readableBytes <= configuration.entryByteLimit else {
            metrics.oversize.increment()
            await endLease(keys, outcome: .notStored)
            return false
        }
        let ttl = configuration.entryTTL.map { Int64(max(1, $0 * 1000)) }
        var commands: [RedisCommand] = [.set(keys.entry, value, milliseconds: ttl)]
        // A stored entry ends every wait for it, so the lease can go whoever holds it now.
        if configuration.fleetCoalescing != nil { commands.append(.del([keys.lease])) }
        let replies = await guarded("SET") { () async throws(RedisClientError) in
            let replies = try await executor.send(commands, routingKey: keys.entry)
            _ = try Self.check(replies.first ?? .null)
            return replies
        }
        guard replies != nil else {
            await endLease(keys, outcome: .abandoned)
            return false
        }
        if configuration.fleetCoalescing != nil { heldLeases.withLock { _ = $0.remove(keys.lease) } }
        metrics.stores.increment()
        metrics.bytesWritten.increment(by: Int64(value.readableBytes))
        return true
    }

    /// Deletes the entry, and the lease only if this process holds it: another process's live lease stays (its
    /// fetch is running, and its waiters wait for it).
    func delete(_ key: String) async {
        let keys = keys(for: key)
        _ = await guarded("DEL") { () async throws(RedisClientError) in
            try Self.check(try await executor.send([.del([keys.entry])], routingKey: keys.entry).first ?? .null)
        }
        await endLease(keys, outcome: .abandoned)
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
