import Foundation
import Hummingbird
import ImageCore
import ImageService
import Logging
import ServiceLifecycle

/// The thumbnail server: an ``ImageService/ImageService`` behind Hummingbird, plus what a process needs around it —
/// configuration, connection limits, health, metrics, logs and a graceful shutdown.
///
/// Routes: `GET /thumbnail` (the service: ``ThumbnailRoute``), `GET /health` (200 while the process serves),
/// `GET /ready` (200 while it takes traffic, 503 once draining), and with samples on, `GET /samples/{name}` and
/// the gallery at `/`. Prometheus `/metrics` is served on its own listener
/// (``ThumbnailServerConfiguration/metricsPort``). Every connection is guarded (``ConnectionGuard``): idle, header
/// and write timeouts, a cap that evicts idle and half-sent connections, and no reading from a client that does
/// not read its answers. With ``ThumbnailServerConfiguration/tracesEndpoint``, the service's spans go to an
/// OpenTelemetry collector (``TracingBackend``).
public struct ThumbnailServer: Sendable {
    /// The HTTP application (run it, or test it with HummingbirdTesting).
    public let application: Application<RouterResponder<BasicRequestContext>>
    /// The service behind `/thumbnail`.
    public let service: ImageService
    /// The metrics (also rendered on the metrics port).
    public let metrics: ServerMetrics
    /// Whether `/ready` answers 200; ``DrainGate`` turns it off at shutdown.
    public let readiness: Readiness
    /// The port of the metrics listener once it runs (useful with port 0).
    public let metricsPort: MetricsPort
    /// The open connections.
    public let connections: ConnectionRegistry
    /// The bytes of answers being written.
    public let output: OutputBudget
    let configuration: ThumbnailServerConfiguration

    /// Builds the server from `configuration`.
    ///
    /// - Throws: ``ConfigurationError`` for settings that don't make a usable server (no signing key and unsigned
    ///   requests not allowed, a bad allowlist entry, address block, key or preset).
    public init(
        _ configuration: ThumbnailServerConfiguration, logger: Logger = Logger(label: "thumbnail-server")
    ) async throws {
        let metrics = ServerMetrics()
        let readiness = Readiness()
        let metricsPort = MetricsPort()
        let tracing = try configuration.tracesEndpoint.map {
            try TracingBackend.make(endpoint: $0, serviceName: "thumbnail-server", logger: logger)
        }
        var serviceConfiguration = configuration.service(logger: logger, metricsFactory: metrics.factory)
        if let tracing { serviceConfiguration.tracer = tracing.tracer }
        let service: ImageService
        do {
            service = try ImageService(configuration: serviceConfiguration)
        } catch let error as ImageServiceConfigurationError {
            throw ConfigurationError(error.message)
        }
        PixelPool.shared.usesHugePages = configuration.usesHugePages
        var limits = configuration.connectionLimits
        if configuration.raisesFileLimit {
            // Room for the connections and for the origin transfers, files and Redis connections beside them.
            let files = FileLimit.raiseToHard()
            if files > 512 { limits.maxConnections = min(limits.maxConnections, Int(clamping: files - 256)) }
        }
        let connections = ConnectionRegistry(maxConnections: limits.maxConnections)
        metrics.connectionCount.withLock { $0 = { connections.count } }

        let output = OutputBudget(limit: configuration.maxPendingOutputBytes)
        let route = ThumbnailRoute(service: service, output: output)
        let router = Router()
        router.add(middleware: RequestLogMiddleware())
        router.get("/thumbnail") { request, context in await route.respond(to: request, logger: context.logger) }
        router.head("/thumbnail") { request, context in await route.respond(to: request, logger: context.logger) }
        // Other methods reach the service too, which answers 405 with `Allow` (the router alone would say 404).
        for method in [HTTPRequest.Method.post, .put, .patch, .delete, .options] {
            router.on("/thumbnail", method: method) { request, context in
                await route.respond(to: request, logger: context.logger)
            }
        }
        router.get("/health") { _, _ in
            Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/ready") { _, _ in
            readiness.isReady
                ? Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(
                    status: .serviceUnavailable, body: ResponseBody(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
        let galleryOrigin = GalleryOrigin(configured: configuration.publicURL, host: configuration.host)
        if configuration.servesSamples {
            try await SampleRoutes.add(to: router, metrics: metrics, origin: galleryOrigin, service: service)
        }

        var services: [any Service] = [ResourcesService(service: service)]
        // First, so it stops last: the spans of the last requests are sent before the process exits.
        if let tracing { services.insert(tracing.service, at: 0) }
        if let port = configuration.metricsPort {
            services.append(
                MetricsEndpoint.application(
                    metrics: metrics, host: configuration.metricsHost, port: port, logger: logger,
                    onRunning: { metricsPort.set($0) }))
        }
        self.application = Application(
            router: router, server: .guardedHTTP1(limits: limits, registry: connections, logger: logger),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), backlog: limits.listenBacklog),
            services: services,
            onServerRunning: { channel in
                if let port = channel.localAddress?.port { galleryOrigin.bound(port: port) }
                readiness.set(true)
            },
            logger: logger)
        self.service = service
        self.metrics = metrics
        self.readiness = readiness
        self.metricsPort = metricsPort
        self.connections = connections
        self.output = output
        self.configuration = configuration
    }

    /// Runs the server until SIGTERM or SIGINT, then drains: `/ready` turns 503, after `drainSeconds` the listener
    /// closes, requests in flight complete (each by its deadline), connections still open a request deadline later
    /// are closed, and the service shuts down. The process can exit within `drainSeconds` + the request deadline.
    public func run(drainSeconds: Double, logger: Logger) async throws {
        let gate = DrainGate(
            readiness: readiness, drainSeconds: drainSeconds, requestTimeout: configuration.requestTimeout,
            connections: connections, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [application, gate], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
