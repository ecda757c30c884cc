import Dispatch
import Foundation
import ImageCore
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A cache level shared by a fleet of servers: image bytes and their metadata in Redis (one server or a Redis
/// Cluster), under hashed keys, with a TTL and a per-entry cap.
///
/// Use it as the lowest level of a ``/ImageCore/CachesManager``:
///
///     let redis = RedisCache(configuration: try RedisCacheConfiguration(url: "redis://10.0.0.5:6379"),
///                            promotingHitsTo: disk)
///     ImageManager.defaultImageCache = CachesManager([MemoryCache.shared, disk, redis])
///
/// It is a bytes level: it answers and stores for ``/ImageCore/ImageCacheType/disk`` (so `.all` and the
/// manager's `originalStoreCacheType` reach it), ignores decoded images, and never decodes. Originals and
/// transformed results are both stored, so a thumbnail made by one replica is served by all. A hit is handed
/// to the manager (which decodes it and promotes it to memory) and, when `promotingHitsTo` is given, written to
/// that cache too (the local disk), so the next hit is local.
///
/// **Degrade, never fail.** Redis down, slow or answering errors (OOM, READONLY, LOADING …) turns into misses
/// and skipped stores within ``RedisCacheConfiguration/commandTimeout``; after
/// ``RedisCacheConfiguration/breakerFailureThreshold`` consecutive failures a circuit breaker stops calling it
/// and probes it in the background with back-off. Errors go to the logger and metrics, never to callers:
/// queries complete with a miss and stores with success.
///
/// **Fleet coalescing** (opt-in, ``RedisCacheConfiguration/fleetCoalescing``): see
/// ``RedisCacheConfiguration/FleetCoalescing``. It lives entirely in `queryImage` / `store`: a miss that takes
/// the lease returns at once (this process downloads, and its store releases the lease); a miss that finds
/// another process's lease waits for that result.
///
/// Threading: thread-safe. Every method returns at once; the work runs on NIO event loops and Swift tasks, and
/// completions are called on the cache's own concurrent Dispatch queue (never on an event loop, never under a
/// lock). Ownership: call ``shutdown()`` when done, to close the connections.
public final class RedisCache: ImageCacheProtocol, Sendable {
    /// The configuration the cache was created with.
    public let configuration: RedisCacheConfiguration

    let executor: any RedisCommandExecutor
    let metrics: RedisCacheMetrics
    let logger: Logger
    let promotionTarget: (any ImageCacheProtocol)?
    /// Identifies this cache's leases (process id + random), so its own loads never wait for themselves.
    let leaseToken: String
    let clock: @Sendable () -> Double
    let callbackQueue = DispatchQueue(
        label: "webimage.rediscache.callbacks", qos: .userInitiated, attributes: .concurrent)
    private let breaker: Mutex<CircuitBreaker>
    private let configurationError: RedisConfigurationError?
    /// The lease keys this cache holds (took with `SET NX` and has not released): only these are released when
    /// the manager reports a miss ended, so most misses cost no extra round trip.
    let heldLeases = Mutex<Set<String>>([])

    /// Creates a cache; connections open on first use.
    ///
    /// - Parameters:
    ///   - configuration: Where Redis is, limits, timeouts, coalescing, logging and metrics.
    ///   - promotingHitsTo: A faster bytes level (usually the local `DiskCache`) that Redis hits are copied to.
    public init(configuration: RedisCacheConfiguration, promotingHitsTo: (any ImageCacheProtocol)? = nil) {
        self.configuration = configuration
        self.logger = configuration.logger
        self.metrics = RedisCacheMetrics(prefix: configuration.metricsPrefix, factory: configuration.metricsFactory)
        self.promotionTarget = promotingHitsTo
        self.leaseToken = "\(ProcessInfo.processInfo.processIdentifier)-\(UInt64.random(in: 0...UInt64.max))"
        let clock = configuration.clock ?? Self.monotonicSeconds
        self.clock = clock
        self.breaker = Mutex(
            CircuitBreaker(
                failureThreshold: configuration.breakerFailureThreshold,
                backoff: Backoff(base: configuration.breakerBackoff.base, maximum: configuration.breakerBackoff.maximum)
            ))
        let (executor, error) = Self.makeExecutor(configuration, clock: clock)
        self.executor = executor
        self.configurationError = error
        if let error {
            configuration.logger.error("Redis cache disabled: \(error)")
        }
    }

    deinit { executor.shutdown() }

    /// Closes every connection. Later operations are misses and skipped stores.
    public func shutdown() { executor.shutdown() }

    /// True while the circuit breaker lets calls through (tests and health checks).
    public var isAvailable: Bool { breaker.withLock { $0.isClosed } && configurationError == nil }

    static func monotonicSeconds() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    private static func makeExecutor(
        _ configuration: RedisCacheConfiguration, clock: @escaping @Sendable () -> Double
    ) -> (any RedisCommandExecutor, RedisConfigurationError?) {
        let address = configuration.primaryAddress
        var options = RedisConnectionOptions()
        options.username = address.username
        options.password = address.password
        options.database = address.database
        options.preferRESP3 = configuration.preferRESP3
        options.clientName = configuration.clientName
        options.connectTimeout = .nanoseconds(Int64(max(0.001, configuration.connectTimeout) * 1e9))
        options.commandTimeout = .nanoseconds(Int64(max(0.001, configuration.commandTimeout) * 1e9))
        options.tlsServerName = configuration.tlsServerName
        // Reads are bounded by `GETRANGE` to the entry limit, so a reply above it plus room for framing is a
        // protocol violation, never an entry another process was allowed to store.
        options.decoderLimits.maxBulkLength = max(configuration.entryByteLimit, 1 << 20) + (64 << 10)
        var failure: RedisConfigurationError?
        if address.usesTLS {
            do {
                options.tls = try NIOSSLContext(
                    configuration: configuration.tlsConfiguration ?? .makeClientConfiguration())
            } catch {
                failure = RedisConfigurationError("TLS configuration: \(error)")
            }
        }
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        let capacity = configuration.connectionsPerServer
        let backoff = Backoff(
            base: configuration.reconnectBackoff.base, maximum: configuration.reconnectBackoff.maximum)
        let makePool: @Sendable (RedisEndpoint) -> RedisConnectionPool = { [options] endpoint in
            RedisConnectionPool(
                endpoint: endpoint, options: options, capacity: capacity, backoff: backoff, group: group, clock: clock)
        }
        let executor: any RedisCommandExecutor
        switch configuration.topology {
        case .single(let address):
            executor = RedisNodeClient(pool: makePool(address.endpoint))
        case .cluster(let seeds):
            executor = RedisClusterClient(
                seeds: seeds.map(\.endpoint), usesTLS: address.usesTLS,
                commandTimeout: max(0.001, configuration.commandTimeout), clock: clock, makePool: makePool)
        }
        if failure != nil { executor.shutdown() }
        return (executor, failure)
    }

    // MARK: Guarded calls

    /// Runs `body` against Redis if the breaker lets it, turning every failure into nil (logged and counted).
    func guarded<T: Sendable>(
        _ operation: StaticString, _ body: () async throws(RedisClientError) -> T
    ) async -> T? {
        guard configurationError == nil else { return nil }
        let now = clock()
        switch breaker.withLock({ $0.admit(now: now) }) {
        case .reject:
            metrics.skipped.increment()
            return nil
        case .probe:
            metrics.skipped.increment()
            startProbe()
            return nil
        case .call:
            break
        }
        do throws(RedisClientError) {
            let value = try await body()
            breaker.withLock { _ = $0.record(failed: false, now: clock(), unit: 0) }
            return value
        } catch {
            metrics.recordError(error.kind.rawValue)
            let unit = Double.random(in: 0...1)
            let opened = breaker.withLock { $0.record(failed: error.isUnavailability, now: clock(), unit: unit) }
            if opened {
                metrics.breakerOpened.increment()
                metrics.breakerOpen.record(1)
                logger.warning(
                    "Redis unavailable: circuit breaker open, cache level skipped until a probe succeeds",
                    metadata: ["error": "\(error)"])
            } else {
                logger.warning("Redis \(operation) failed", metadata: ["error": "\(error)"])
            }
            return nil
        }
    }

    /// One `PING` while the breaker is open; its result closes the breaker or re-opens it for longer.
    private func startProbe() {
        Task {
            let succeeded: Bool
            do {
                let reply = try await executor.send([RedisCommand(["PING"])], routingKey: nil)
                if case .error = reply.first { succeeded = false } else { succeeded = true }
            } catch {
                succeeded = false
            }
            let unit = Double.random(in: 0...1)
            let closed = breaker.withLock { $0.probeEnded(succeeded: succeeded, now: clock(), unit: unit) }
            if closed {
                metrics.breakerOpen.record(0)
                logger.notice("Redis answers again: circuit breaker closed")
            } else {
                logger.debug("Redis probe failed: circuit breaker stays open")
            }
        }
    }

    /// A server error reply as a failure of the call (so OOM, READONLY, LOADING … count for the breaker).
    static func check(_ reply: RESPValue) throws(RedisClientError) -> RESPValue {
        if case .error(let message) = reply { throw RedisClientError(.server, message) }
        return reply
    }
}
