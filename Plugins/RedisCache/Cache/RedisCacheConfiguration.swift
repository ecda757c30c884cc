import Foundation
import Logging
import Metrics
import NIOCore
import NIOSSL

/// Everything a ``RedisCache`` is built with; a value, copied into the cache at `init`.
///
/// Defaults suit a cache tier on the same network as the servers: answers are expected within milliseconds, so
/// a command that takes 250 ms is treated as a failure and the load carries on without Redis.
public struct RedisCacheConfiguration: Sendable {
    /// One server, or the seed nodes of a Redis Cluster.
    public enum Topology: Sendable, Hashable {
        /// A single server (or a proxy in front of several).
        case single(RedisServerAddress)
        /// A Redis Cluster, reached through any of these nodes; the slot map is read from them.
        case cluster(seeds: [RedisServerAddress])
    }

    /// Fleet-wide coalescing: when several processes miss the same key at once, one fetches and the others wait
    /// for its result.
    ///
    /// A process that misses takes a lease (`SET <key>:lease <token> NX PX <leaseDuration>`) and fetches; the
    /// others, finding the lease taken, poll for the entry (every `pollInterval.lowerBound`, doubling up to
    /// `pollInterval.upperBound`) until it appears, the lease disappears (the holder gave up or died: they take
    /// the lease or keep waiting for the new holder), the lease becomes the "nothing to share" mark, or `maxWait`
    /// passes, then fetch themselves. The lease has one owner and always ends: storing the entry deletes it; when
    /// the owner's fetch ends without a store, the manager tells the cache
    /// (``/ImageCore/ImageCacheProtocol/missEnded(forKey:cacheType:outcome:)``) and the owner — by a compare on its
    /// token, never touching another process's lease — deletes it (cancelled, a transient failure: a waiter takes
    /// over) or turns it into the mark for ``notStoredMarkerDuration`` (a 404, `no-store`, an entry over the cap,
    /// undecodable bytes: waiters stop at their next poll). A dead owner's lease expires after ``leaseDuration``.
    public struct FleetCoalescing: Sendable, Hashable {
        /// How long a lease holds without being released, seconds (default 10): the longest a dead holder delays
        /// the others.
        public var leaseDuration: Double
        /// The longest a waiter waits before fetching itself, seconds (default 10).
        public var maxWait: Double
        /// First and longest delay between two polls of a waiter, seconds (default 0.01…0.2).
        public var pollInterval: ClosedRange<Double>
        /// How long the mark "fetched, nothing to share" stays after a holder's fetch ends without storing (a 404,
        /// `no-store`, an entry over the cap, undecodable bytes), seconds (default 1): waiters that see it stop
        /// at once and fetch for themselves, and so do new misses while it lasts. At least twice the longest poll.
        public var notStoredMarkerDuration: Double

        /// Creates the settings.
        public init(
            leaseDuration: Double = 10, maxWait: Double = 10, pollInterval: ClosedRange<Double> = 0.01...0.2,
            notStoredMarkerDuration: Double = 1
        ) {
            self.leaseDuration = max(0.001, leaseDuration)
            self.maxWait = max(0, maxWait)
            self.pollInterval = max(0.001, pollInterval.lowerBound)...max(0.001, pollInterval.upperBound)
            self.notStoredMarkerDuration = max(notStoredMarkerDuration, 2 * self.pollInterval.upperBound)
        }
    }

    /// Where Redis is.
    public var topology: Topology
    /// TLS settings for `rediss://` (default: the system's trust roots, full verification).
    public var tlsConfiguration: TLSConfiguration?
    /// The name checked against the server certificate when it differs from the host in the URL.
    public var tlsServerName: String?
    /// Prefix of every key this cache writes (default `webimage:`); caches with different prefixes share
    /// nothing, and ``RedisCache/clear(cacheType:completion:)`` removes only keys with this prefix.
    public var keyPrefix = "webimage:"
    /// Entries expire this many seconds after they were stored (default 7 days); nil keeps them until Redis
    /// evicts them (configure `maxmemory-policy allkeys-lru` on the server).
    public var entryTTL: Double? = 7 * 24 * 3600
    /// Entries larger than this many bytes (image bytes plus metadata) are not stored (default 8 MiB), and a larger
    /// entry another process stored is a miss here: it is never read past this size, so it costs this process
    /// neither the memory nor its connection. Values above Redis's own 512 MiB bulk limit count as that limit.
    public var maxEntryBytes = 8 << 20

    /// ``maxEntryBytes`` within 0 … 512 MiB − 64 KiB, so adding a reply's framing never overflows.
    var entryByteLimit: Int { min(max(maxEntryBytes, 0), (512 << 20) - (64 << 10)) }
    /// Connections per server (default 2); commands are pipelined on them.
    public var connectionsPerServer = 2
    /// Time to connect, including TLS and the handshake, seconds (default 1).
    public var connectTimeout: Double = 1
    /// Time for one cache operation (waiting for a connection included), seconds (default 0.25).
    public var commandTimeout: Double = 0.25
    /// Delays between reconnect attempts after failed connects (default 0.05 s doubling to 5 s, ±20 %).
    public var reconnectBackoff = (base: 0.05, maximum: 5.0)
    /// Consecutive failures that open the circuit breaker (default 5).
    public var breakerFailureThreshold = 5
    /// Delays between probes while the breaker is open (default 0.5 s doubling to 30 s, ±20 %).
    public var breakerBackoff = (base: 0.5, maximum: 30.0)
    /// Fleet-wide coalescing; nil (the default) turns it off.
    public var fleetCoalescing: FleetCoalescing?
    /// Ask for RESP3 with `HELLO 3` (default true; servers without it are spoken to in RESP2).
    public var preferRESP3 = true
    /// `CLIENT SETNAME` of every connection (default `webimage`), so `CLIENT LIST` shows who is connected.
    public var clientName: String? = "webimage"
    /// Where the cache logs: warnings when Redis fails or the breaker opens, debug for each probe.
    public var logger = Logger(label: "webimage.rediscache")
    /// The metrics backend; nil uses the process-wide `MetricsSystem` factory.
    public var metricsFactory: (any MetricsFactory)?
    /// Prefix of every metric label (default `webimage_redis`).
    public var metricsPrefix = "webimage_redis"
    /// The event loops of the connections; nil uses NIO's process-wide singleton group.
    public var eventLoopGroup: (any EventLoopGroup)?
    /// Monotonic seconds for the breaker, back-off and waits; nil uses the system's monotonic clock. Tests
    /// inject their own.
    public var clock: (@Sendable () -> Double)?

    /// A configuration for `topology`.
    public init(topology: Topology) { self.topology = topology }

    /// A configuration for one server: `redis://[[user]:password@]host[:port][/db]`, `rediss://…`,
    /// `redis+unix:///path[?db=N&password=…]`.
    ///
    /// - Throws: ``RedisConfigurationError`` for a URL it cannot use.
    public init(url: String) throws(RedisConfigurationError) {
        self.init(topology: .single(try RedisServerAddress(url: url)))
    }

    /// A configuration for a Redis Cluster reached through `seeds` (URLs as for one server; database 0 only).
    ///
    /// - Throws: ``RedisConfigurationError`` for an unusable URL, no seeds, a database other than 0, or seeds
    ///   that mix TLS and plain connections.
    public init(clusterSeeds seeds: [String]) throws(RedisConfigurationError) {
        var addresses: [RedisServerAddress] = []
        for seed in seeds { addresses.append(try RedisServerAddress(url: seed)) }
        guard let first = addresses.first else { throw RedisConfigurationError("no cluster seeds") }
        guard addresses.allSatisfy({ $0.database == 0 }) else {
            throw RedisConfigurationError("Redis Cluster has only database 0")
        }
        guard addresses.allSatisfy({ $0.usesTLS == first.usesTLS }) else {
            throw RedisConfigurationError("cluster seeds mix rediss:// and redis://")
        }
        self.init(topology: .cluster(seeds: addresses))
    }

    /// Reads `--redis URL` style settings: one URL for a server, or several separated by commas for the seeds of
    /// a cluster (`redis://h1:7000,redis://h2:7001`). A `cluster=1` query item marks a single seed as a cluster.
    ///
    /// - Throws: ``RedisConfigurationError`` as the other initializers.
    public init(urlList: String) throws(RedisConfigurationError) {
        let urls = urlList.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        let markedCluster = urls.count == 1 && urls[0].contains("cluster=1")
        if urls.count > 1 || markedCluster {
            try self.init(clusterSeeds: urls)
        } else {
            guard let url = urls.first else { throw RedisConfigurationError("no Redis URL") }
            try self.init(url: url)
        }
    }

    /// The first address (a single server, or the first seed): where credentials and TLS come from.
    var primaryAddress: RedisServerAddress {
        switch topology {
        case .single(let address): address
        case .cluster(let seeds): seeds[0]
        }
    }
}
