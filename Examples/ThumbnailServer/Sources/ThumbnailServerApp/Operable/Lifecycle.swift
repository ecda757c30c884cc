import Foundation
import ImageService
import Logging
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
/// stops accepting and finishes the requests in flight (Hummingbird's quiescing): each of them is answered by its
/// deadline at the latest, so `requestTimeout` after the listener closed every connection still open is closed —
/// a client that doesn't read its answers can't hold the process — and the process exits within `drainSeconds` +
/// `requestTimeout` of the signal.
public struct DrainGate: Service {
    let readiness: Readiness
    let drainSeconds: Double
    let requestTimeout: Double
    let connections: ConnectionRegistry
    let logger: Logger

    /// Creates the gate.
    public init(
        readiness: Readiness, drainSeconds: Double, requestTimeout: Double, connections: ConnectionRegistry,
        logger: Logger
    ) {
        self.readiness = readiness
        self.drainSeconds = drainSeconds
        self.requestTimeout = requestTimeout
        self.connections = connections
        self.logger = logger
    }

    public func run() async throws {
        readiness.set(true)
        try? await gracefulShutdown()
        readiness.set(false)
        logger.info("shutting down: not ready; draining", metadata: ["drain_seconds": "\(drainSeconds)"])
        if drainSeconds > 0 { try? await Task.sleep(for: .milliseconds(Int64(drainSeconds * 1000))) }
        // The listener closes when this returns; whatever is still open a deadline later is closed.
        let connections = connections
        let logger = logger
        let timeout = requestTimeout
        Task.detached {
            try? await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            let open = connections.count
            if open > 0 {
                logger.info(
                    "closing connections still open a request deadline after the drain", metadata: ["open": "\(open)"])
                connections.closeAll()
            }
        }
    }
}

/// Shuts the service (origin clients, Redis connections) down once the HTTP server has stopped (the application's
/// own services are shut down after its server, in reverse order of registration).
struct ResourcesService: Service {
    let service: ImageService

    func run() async throws {
        try? await gracefulShutdown()
        await service.shutdown()
    }
}
