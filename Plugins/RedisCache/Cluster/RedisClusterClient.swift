import NIOCore
import Synchronization

/// Sends commands to the primary that serves their key's slot in a Redis Cluster.
///
/// - The slot map is read from `CLUSTER SHARDS` (Redis 7), or `CLUSTER SLOTS` where that is missing, from any
///   known node (the current primaries, then the seeds), on first use and again after a topology change.
/// - `MOVED` updates the slot at once and schedules a full re-read (rate-limited, coalesced: one read at a time);
///   `ASK` re-sends to the importing node with `ASKING` before each command; `TRYAGAIN` retries shortly. A
///   command is redirected at most ``maxRedirects`` times.
/// - A node that cannot be reached triggers a re-read and one retry (a failover or a node that left).
///
/// Threading: thread-safe (one `Mutex` around the map and the pools); nothing awaits under the lock.
final class RedisClusterClient: RedisCommandExecutor {
    let maxRedirects = 5
    private let seeds: [RedisEndpoint]
    private let usesTLS: Bool
    private let minimumRefreshInterval: Double
    private let clock: @Sendable () -> Double
    private let makePool: @Sendable (RedisEndpoint) -> RedisConnectionPool
    /// The whole of one ``send(_:routingKey:)``, redirects and retries included, seconds.
    private let commandTimeout: Double

    private struct State {
        var map: ClusterSlotMap?
        var pools: [RedisEndpoint: RedisConnectionPool] = [:]
        var refresh: Task<ClusterSlotMap, any Error>?
        var lastRefresh: Double = -.infinity
        var refreshCount = 0
        var isShutdown = false
    }

    private let state = Mutex(State())

    init(
        seeds: [RedisEndpoint], usesTLS: Bool, minimumRefreshInterval: Double = 0.1, commandTimeout: Double = 0.25,
        clock: @escaping @Sendable () -> Double, makePool: @escaping @Sendable (RedisEndpoint) -> RedisConnectionPool
    ) {
        self.commandTimeout = commandTimeout
        self.seeds = seeds
        self.usesTLS = usesTLS
        self.minimumRefreshInterval = minimumRefreshInterval
        self.clock = clock
        self.makePool = makePool
    }

    /// How many times the slot map was read successfully (tests: a MOVED makes it grow).
    var refreshCount: Int { state.withLock { $0.refreshCount } }

    /// The current map, if read.
    var currentMap: ClusterSlotMap? { state.withLock { $0.map } }

    // MARK: RedisCommandExecutor

    /// Sends `commands` to the node of their slot, following redirects; every command sent for the call, across
    /// redirects and retries, fits in one command timeout (a slot-map read, shared by every caller and bounded by
    /// its own timeouts, is not counted).
    func send(_ commands: [RedisCommand], routingKey: String?) async throws(RedisClientError) -> [RESPValue] {
        let slot = routingKey.map { HashSlot.slot(forKey: $0) } ?? 0
        let deadline = clock() + commandTimeout
        /// What is left of the call's time; throws once it is spent.
        func remaining() throws(RedisClientError) -> TimeAmount {
            let left = deadline - clock()
            guard left > 0 else {
                throw RedisClientError(.timedOut, "no reply for slot \(slot) within the command timeout")
            }
            return .nanoseconds(Int64(left * 1e9))
        }
        var ask: RedisEndpoint?
        var retriedUnreachable = false
        for _ in 0...maxRedirects {
            let target: RedisEndpoint
            if let ask {
                target = ask
            } else {
                let map = try await slotMap()
                guard let endpoint = map.endpoint(forSlot: slot) else {
                    scheduleRefresh()
                    throw RedisClientError(.cluster, "no node serves slot \(slot)")
                }
                target = endpoint
            }
            let replies: [RESPValue]
            do throws(RedisClientError) {
                if ask != nil {
                    let asking = RedisCommand(["ASKING"])
                    let all = try await pool(for: target).send(
                        commands.flatMap { [asking, $0] }, timeout: try remaining()
                    ).redisValue()
                    replies = stride(from: 1, to: all.count, by: 2).map { all[$0] }
                } else {
                    replies = try await pool(for: target).send(commands, timeout: try remaining()).redisValue()
                }
            } catch {
                guard !retriedUnreachable, error.kind != .timedOut, error.kind != .server else { throw error }
                retriedUnreachable = true
                ask = nil
                _ = try remaining()
                _ = try? await refreshMap(force: true)
                continue
            }
            ask = nil
            if let redirect = Self.redirect(in: replies, from: target) {
                switch redirect.kind {
                case .moved:
                    state.withLock { $0.map?.moved(slot: redirect.slot, to: redirect.endpoint) }
                    scheduleRefresh()
                case .ask:
                    ask = redirect.endpoint
                }
                continue
            }
            if replies.contains(where: {
                if case .error(let message) = $0 { message.hasPrefix("TRYAGAIN") } else { false }
            }) {
                _ = try remaining()
                try? await Task.sleep(nanoseconds: 10_000_000)
                continue
            }
            return replies
        }
        throw RedisClientError(.cluster, "more than \(maxRedirects) redirections for slot \(slot)")
    }

    func primaries() async throws(RedisClientError) -> [RedisEndpoint] { try await slotMap().primaries }

    var isCluster: Bool { true }

    func send(_ command: RedisCommand, to endpoint: RedisEndpoint) async throws(RedisClientError) -> RESPValue {
        try await pool(for: endpoint).send([command]).redisValue().first ?? .null
    }

    func shutdown() {
        let pools = state.withLock { state -> [RedisConnectionPool] in
            state.isShutdown = true
            state.refresh?.cancel()
            defer { state.pools = [:] }
            return Array(state.pools.values)
        }
        for pool in pools { pool.shutdown() }
    }

    // MARK: Map

    private static func redirect(in replies: [RESPValue], from target: RedisEndpoint) -> ClusterRedirect? {
        let host: String
        switch target {
        case .tcp(let name, _): host = name
        case .unix: host = "127.0.0.1"
        }
        for reply in replies {
            if case .error(let message) = reply, let redirect = ClusterRedirect(message, currentHost: host) {
                return redirect
            }
        }
        return nil
    }

    private func pool(for endpoint: RedisEndpoint) throws(RedisClientError) -> RedisConnectionPool {
        let pool = state.withLock { state -> RedisConnectionPool? in
            guard !state.isShutdown else { return nil }
            if let pool = state.pools[endpoint] { return pool }
            let pool = makePool(endpoint)
            state.pools[endpoint] = pool
            return pool
        }
        guard let pool else { throw RedisClientError(.unavailable, "client shut down") }
        return pool
    }

    private func slotMap() async throws(RedisClientError) -> ClusterSlotMap {
        if let map = state.withLock({ $0.map }) { return map }
        return try await refreshMap(force: true)
    }

    /// Re-reads the map in the background (MOVED: the map is stale but the slot was already fixed).
    private func scheduleRefresh() {
        Task { _ = try? await self.refreshMap(force: false) }
    }

    /// Reads the map, sharing a read already running; without `force`, at most once per minimum interval.
    @discardableResult
    private func refreshMap(force: Bool) async throws(RedisClientError) -> ClusterSlotMap {
        let now = clock()
        let task = state.withLock { state -> Task<ClusterSlotMap, any Error>? in
            if let running = state.refresh { return running }
            if !force, let map = state.map, now - state.lastRefresh < minimumRefreshInterval {
                return Task { map }
            }
            let task = Task { try await self.readMap() }
            state.refresh = task
            return task
        }
        guard let task else { throw RedisClientError(.unavailable, "client shut down") }
        let result = await task.result
        let retired = state.withLock { state -> [RedisConnectionPool] in
            if state.refresh == task { state.refresh = nil }
            guard case .success(let map) = result else { return [] }
            state.lastRefresh = now
            state.refreshCount += 1
            guard map != state.map else { return [] }
            state.map = map
            // Pools of nodes that left the cluster (seeds stay: they may come back as the way in).
            let keep = Set(map.primaries).union(seeds)
            let gone = state.pools.keys.filter { !keep.contains($0) }
            return gone.compactMap { state.pools.removeValue(forKey: $0) }
        }
        for pool in retired { pool.shutdown() }
        switch result {
        case .success(let map): return map
        case .failure(let error as RedisClientError): throw error
        case .failure(let error): throw RedisClientError(.cluster, "\(error)")
        }
    }

    /// Asks the known primaries, then the seeds, until one answers with a map.
    private func readMap() async throws(RedisClientError) -> ClusterSlotMap {
        var candidates = state.withLock { $0.map?.primaries ?? [] }
        for seed in seeds where !candidates.contains(seed) { candidates.append(seed) }
        var lastError = RedisClientError(.cluster, "no seed nodes")
        for endpoint in candidates {
            let host: String
            switch endpoint {
            case .tcp(let name, _): host = name
            case .unix: host = "127.0.0.1"
            }
            do throws(RedisClientError) {
                let shards = try await send(RedisCommand(["CLUSTER", "SHARDS"]), to: endpoint)
                if case .error(let message) = shards {
                    guard message.lowercased().contains("unknown") else {
                        throw RedisClientError(.server, message)
                    }
                    let slots = try await send(RedisCommand(["CLUSTER", "SLOTS"]), to: endpoint)
                    if case .error(let message) = slots { throw RedisClientError(.server, message) }
                    return try ClusterSlotMap.fromSlots(slots, fallbackHost: host)
                }
                return try ClusterSlotMap.fromShards(shards, fallbackHost: host, tls: usesTLS)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}
