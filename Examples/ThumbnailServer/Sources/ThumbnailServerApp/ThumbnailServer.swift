import DiskCache
import Foundation
import HTTPLoader
import Hummingbird
import ImageCore
import Logging
import RedisCache
import ServiceLifecycle
import ThumbnailQuery
import WebImage

/// The thumbnail server: the HTTP application and what the tests and `main` need to reach inside it.
///
/// Routes: `GET /thumbnail` (``ThumbnailRoute``), `GET /health` (200 while the process serves), `GET /ready`
/// (200 while it takes traffic, 503 once draining), and with samples on, `GET /samples/{name}` and the gallery at
/// `/`. Prometheus `/metrics` is served on its own listener (``ThumbnailServerConfiguration/metricsPort``).
public struct ThumbnailServer: Sendable {
    /// The HTTP application (run it, or test it with HummingbirdTesting).
    public let application: Application<RouterResponder<BasicRequestContext>>
    /// The metrics (also rendered on the metrics port).
    public let metrics: ServerMetrics
    /// Whether `/ready` answers 200; ``DrainGate`` turns it off at shutdown.
    public let readiness: Readiness
    /// The port of the metrics listener once it runs (useful with port 0).
    public let metricsPort: MetricsPort

    /// Builds the server from `configuration`.
    ///
    /// - Throws: ``ConfigurationError`` for settings that don't make a usable server (no signing key and unsigned
    ///   requests not allowed, a bad allowlist entry, address block, key or preset).
    public init(
        _ configuration: ThumbnailServerConfiguration, logger: Logger = Logger(label: "thumbnail-server")
    ) async throws {
        let setup = try Setup(configuration)
        for coder: any ImageCoder in [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
        ] {
            CodersManager.shared.addCoder(coder)
        }
        // Sources with an ICC profile (or CMYK) are converted to sRGB at decode (SourceLimits.decodeOptions).
        ColorConversion.register(LCMSColorConverter.shared)
        let metrics = ServerMetrics()
        let readiness = Readiness()
        let metricsPort = MetricsPort()
        let directory =
            configuration.cacheDirectory ?? DiskCacheConfiguration.defaultDirectory(namespace: "thumbnail-server")
        func disk(_ name: String, bytes: Int) -> DiskCache? {
            guard bytes > 0 else { return nil }
            var disk = DiskCacheConfiguration(
                directory: directory.appendingPathComponent(name, isDirectory: true), maxDiskSize: bytes,
                maxEntrySize: max(configuration.maxSourceBytes, 1 << 20))
            disk.metricsFactory = metrics.factory
            disk.metricsPrefix = "thumbnail_\(name)_disk"
            disk.logger = logger
            return DiskCache(configuration: disk)
        }
        let redis = try configuration.redis.map { urls in
            var redis = try RedisCacheConfiguration(urlList: urls)
            redis.keyPrefix = configuration.redisKeyPrefix
            redis.fleetCoalescing = .init()
            redis.maxEntryBytes = max(redis.maxEntryBytes, configuration.maxSourceBytes)
            redis.metricsFactory = metrics.factory
            redis.metricsPrefix = "thumbnail_redis"
            redis.logger = logger
            return RedisCache(configuration: redis)
        }
        let results = LayeredCache(
            kind: .result, memory: BytesMemoryCache(limit: configuration.resultMemoryBytes),
            disk: disk("results", bytes: configuration.resultDiskBytes), redis: redis, metrics: metrics)
        let sources = LayeredCache(
            kind: .source, memory: BytesMemoryCache(limit: configuration.sourceMemoryBytes),
            disk: disk("sources", bytes: configuration.sourceDiskBytes), redis: redis, metrics: metrics)

        var loader = HTTPLoaderConfiguration()
        loader.maximumResponseSize = configuration.maxSourceBytes
        loader.timeout = configuration.originTimeout
        loader.maximumTransferDuration = configuration.originTimeout
        loader.maxConcurrentDownloads = max(8, configuration.workers)
        loader.acceptedFormats = [.avif, .webp, .png, .jpeg, .gif]
        loader.metricsFactory = metrics.factory
        loader.metricsPrefix = "thumbnail_origin_http"
        loader.logger = logger
        let clients = OriginClients(
            capacity: 64, loaderConfiguration: loader, connectTimeout: configuration.originTimeout)
        let fetcher = OriginFetcher(
            allowlist: setup.allowlist, addressPolicy: setup.addressPolicy,
            resolver: configuration.resolver ?? SystemResolver(ttl: configuration.dnsCacheSeconds), clients: clients,
            maxRedirects: configuration.maxRedirects, onRequest: { metrics.originRequests.increment() })
        let workers = WorkerPool(workers: configuration.workers, queueLimit: configuration.queueLimit) {
            running, waiting in
            metrics.inFlight.set(Double(running))
            metrics.queueDepth.set(Double(waiting))
        }
        let renderer = Renderer(
            coders: CodersManager.shared, pool: WorkPool.cpu,
            limits: SourceLimits(maxPixels: configuration.maxSourcePixels, maxFrames: configuration.maxSourceFrames),
            encoding: configuration.encoding)
        let pipeline = ThumbnailPipeline(
            results: results, sources: sources, fetcher: fetcher, renderer: renderer, workers: workers, metrics: metrics
        )
        let route = ThumbnailRoute(
            signer: setup.signer, allowUnsigned: configuration.allowUnsigned, parser: setup.parser, pipeline: pipeline,
            cacheControl: configuration.cacheControl, requestTimeout: configuration.requestTimeout,
            canEncodeAVIF: CodersManager.shared.canEncode(to: .avif), metrics: metrics)

        let router = Router()
        router.add(middleware: RequestLogMiddleware())
        router.get("/thumbnail") { request, context in await route.respond(to: request, logger: context.logger) }
        router.get("/health") { _, _ in
            Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/ready") { _, _ in
            readiness.isReady
                ? Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(
                    status: .serviceUnavailable, body: ResponseBody(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
        if configuration.servesSamples {
            try await SampleRoutes.add(
                to: router, metrics: metrics, host: configuration.host, port: configuration.port,
                signer: setup.signer.keyCount > 0 ? setup.signer : nil)
        }

        var services: [any Service] = [ResourcesService(clients: clients, redis: redis.map { [$0] } ?? [])]
        if let port = configuration.metricsPort {
            services.append(
                MetricsEndpoint.application(
                    metrics: metrics, host: configuration.metricsHost, port: port, logger: logger,
                    onRunning: { metricsPort.set($0) }))
        }
        self.application = Application(
            router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            services: services,
            onServerRunning: { _ in readiness.set(true) },
            logger: logger)
        self.metrics = metrics
        self.readiness = readiness
        self.metricsPort = metricsPort
    }

    /// Runs the server until SIGTERM or SIGINT, then drains: `/ready` turns 503, after `drainSeconds` the listener
    /// closes, requests in flight complete, and the clients and caches shut down.
    public func run(drainSeconds: Double, logger: Logger) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: [application, DrainGate(readiness: readiness, drainSeconds: drainSeconds, logger: logger)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// What the configuration turns into before anything is started; every check that can fail is here.
struct Setup {
    let signer: URLSigner
    let allowlist: HostAllowlist
    let addressPolicy: AddressPolicy
    let parser: OptionsParser

    init(_ configuration: ThumbnailServerConfiguration) throws {
        do {
            signer = try URLSigner(encodedKeys: configuration.signingKeys)
        } catch {
            throw ConfigurationError(error.message)
        }
        guard signer.keyCount > 0 || configuration.allowUnsigned else {
            throw ConfigurationError(
                "no SIGNING_KEYS: give at least one key, or set ALLOW_UNSIGNED=1 to serve unsigned requests")
        }
        do {
            allowlist = try HostAllowlist(configuration.allowedHosts)
        } catch {
            throw ConfigurationError("ALLOWED_HOSTS: \(error.message)")
        }
        var ranges: [AddressRange] = []
        for text in configuration.allowedAddresses {
            guard let range = AddressRange(text) else {
                throw ConfigurationError("ALLOWED_ADDRESSES: \(text) is not an address or a CIDR block")
            }
            ranges.append(range)
        }
        addressPolicy = AddressPolicy(allowing: ranges)
        let presets: Presets
        do {
            presets = try Presets(configuration.presets)
        } catch {
            throw ConfigurationError("PRESETS: \(error.message)")
        }
        parser = OptionsParser(
            limits: .init(
                maxSide: configuration.maxThumbnailSide, allowedWidths: Set(configuration.allowedWidths),
                allowedHeights: Set(configuration.allowedHeights), maxDPR: configuration.maxDPR,
                allowsAnimation: configuration.allowAnimation, presetsOnly: configuration.presetsOnly),
            presets: presets)
        // Every preset's values must be valid (a preset may leave the size to others it is combined with).
        let checker = OptionsParser(limits: .init(maxSide: Int.max, maxDPR: .greatestFiniteMagnitude), presets: presets)
        for name in presets.names {
            do {
                _ = try checker.parse([("url", "http://preset.check/"), ("preset", name)])
            } catch  where error.message != OptionsParser.Invalid.missingSize.message {
                throw ConfigurationError("PRESETS: preset \(name): \(error.message)")
            } catch {}
        }
    }
}
