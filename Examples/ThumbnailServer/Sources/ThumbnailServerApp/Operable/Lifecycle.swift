import Foundation
import Logging
import RedisCache
import ServiceLifecycle
import Synchronization

/// Whether the server takes traffic: `/ready` answers 200 only while it does. Thread-safe.
public final class Readiness: Sendable {
    private let ready = Atomic<Bool>(false)

    public init() {}

    /// True between start-up and the first shutdown signal.
    public var isReady: Bool { ready.load(ordering: .acquiring) }

    func set(_ value: Bool) { ready.store(value, ordering: .releasing) }
}

/// The first service to hear a shutdown signal: `/ready` turns 503 at once, and the listener stays open
/// `drainSeconds` longer so load balancers take the replica out before it stops accepting. Then the HTTP server
/// stops accepting and finishes the requests in flight (Hummingbird's quiescing), and the resources go last.
public struct DrainGate: Service {
    let readiness: Readiness
    let drainSeconds: Double
    let logger: Logger

    /// Creates the gate.
    public init(readiness: Readiness, drainSeconds: Double, logger: Logger) {
        self.readiness = readiness
        self.drainSeconds = drainSeconds
        self.logger = logger
    }

    public func run() async throws {
        readiness.set(true)
        try? await gracefulShutdown()
        readiness.set(false)
        logger.info("shutting down: not ready; draining", metadata: ["drain_seconds": "\(drainSeconds)"])
        if drainSeconds > 0 { try? await Task.sleep(for: .milliseconds(Int64(drainSeconds * 1000))) }
    }
}

/// Shuts the origin clients and the Redis connections down once the HTTP server has stopped (the application's
/// own services are shut down after its server, in reverse order of registration).
struct ResourcesService: Service {
    let clients: OriginClients
    let redis: [RedisCache]

    func run() async throws {
        try? await gracefulShutdown()
        for cache in redis { cache.shutdown() }
        await clients.shutdown()
    }
}
