import NIOCore

/// Sends commands to "the Redis": one server, or the right node of a cluster.
///
/// Threading: implementations are thread-safe and never block; `send` suspends until the replies arrive or the
/// command timeout passes.
protocol RedisCommandExecutor: Sendable {
    /// Sends `commands` together on one connection and returns their replies in order. Every key they touch must
    /// be in the slot of `routingKey` (the cache keeps an entry and its lease in one slot with a hash tag); a
    /// cluster client routes by it and follows `MOVED` / `ASK`. Server error replies come back as
    /// ``RESPValue/error(_:)`` values, except redirections, which are followed.
    ///
    /// - Throws: ``RedisClientError`` for transport failures, timeouts and cluster trouble.
    func send(_ commands: [RedisCommand], routingKey: String?) async throws(RedisClientError) -> [RESPValue]

    /// The primaries (one for a single server), for `SCAN`-based clearing.
    func primaries() async throws(RedisClientError) -> [RedisEndpoint]

    /// True for a cluster: multi-key commands must then stay within one slot.
    var isCluster: Bool { get }

    /// Sends `command` to one given primary.
    func send(_ command: RedisCommand, to endpoint: RedisEndpoint) async throws(RedisClientError) -> RESPValue

    /// Closes every connection; later sends fail with `unavailable`.
    func shutdown()
}

extension EventLoopFuture where Value: Sendable {
    /// The value, with every failure as a ``RedisClientError``.
    func redisValue() async throws(RedisClientError) -> Value {
        do {
            return try await get()
        } catch let error as RedisClientError {
            throw error
        } catch {
            throw RedisClientError(.connectionClosed, "\(error)")
        }
    }
}

/// One Redis server behind one pool.
final class RedisNodeClient: RedisCommandExecutor {
    let pool: RedisConnectionPool

    init(pool: RedisConnectionPool) { self.pool = pool }

    func send(_ commands: [RedisCommand], routingKey: String?) async throws(RedisClientError) -> [RESPValue] {
        try await pool.send(commands).redisValue()
    }

    func primaries() async throws(RedisClientError) -> [RedisEndpoint] { [pool.endpoint] }

    var isCluster: Bool { false }

    func send(_ command: RedisCommand, to endpoint: RedisEndpoint) async throws(RedisClientError) -> RESPValue {
        try await pool.send([command]).redisValue().first ?? .null
    }

    func shutdown() { pool.shutdown() }
}
