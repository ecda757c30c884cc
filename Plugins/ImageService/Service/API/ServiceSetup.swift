import DiskCache
import Foundation
import HTTPLoader
import ImageCore
import ImageServiceQuery
import RedisCache

/// What the configuration turns into before anything is started; every check that can fail is here.
struct ServiceSetup {
    let signer: URLSigner
    let policy: SourcePolicy
    let parser: OptionsParser

    init(_ configuration: ImageServiceConfiguration) throws {
        do {
            signer = try URLSigner(encodedKeys: configuration.signingKeys)
        } catch {
            throw ImageServiceConfigurationError(error.message)
        }
        guard signer.keyCount > 0 || configuration.allowUnsigned else {
            throw ImageServiceConfigurationError(
                "no signing keys: give at least one key, or allow unsigned requests")
        }
        let allowlist: HostAllowlist
        do {
            allowlist = try HostAllowlist(configuration.allowedHosts)
        } catch {
            throw ImageServiceConfigurationError("allowed hosts: \(error.message)")
        }
        var ranges: [AddressRange] = []
        for text in configuration.allowedAddresses {
            guard let range = AddressRange(text) else {
                throw ImageServiceConfigurationError("allowed addresses: \(text) is not an address or a CIDR block")
            }
            ranges.append(range)
        }
        policy = SourcePolicy(allowlist: allowlist, addresses: AddressPolicy(allowing: ranges))
        let presets: Presets
        do {
            presets = try Presets(configuration.presets)
        } catch {
            throw ImageServiceConfigurationError("presets: \(error.message)")
        }
        parser = OptionsParser(
            limits: .init(
                maxSide: configuration.maxSide, allowedWidths: Set(configuration.allowedWidths),
                allowedHeights: Set(configuration.allowedHeights), maxDPR: configuration.maxDPR,
                allowsAnimation: configuration.allowAnimation, presetsOnly: configuration.presetsOnly),
            presets: presets)
        // Every preset's values must be valid (a preset may leave the size to others it is combined with).
        let checker = OptionsParser(limits: .init(maxSide: Int.max, maxDPR: .greatestFiniteMagnitude), presets: presets)
        for name in presets.names {
            do {
                _ = try checker.parse([("url", "http://preset.check/"), ("preset", name)])
            } catch  where error.message != OptionsParser.Invalid.missingSize.message {
                throw ImageServiceConfigurationError("presets: preset \(name): \(error.message)")
            } catch {}
        }
    }
}

extension PipelineEngine {
    /// The engine of `configuration`: caches (memory, disk, Redis), pinned origin clients, the fetcher, the renderer.
    static func make(
        _ configuration: ImageServiceConfiguration, policy: SourcePolicy, coders: CodersManager,
        encoding: EncodingSettings, metrics: ServiceMetrics
    ) throws -> PipelineEngine {
        let logger = configuration.logger
        let prefix = configuration.metricsPrefix
        let directory =
            configuration.cacheDirectory ?? DiskCacheConfiguration.defaultDirectory(namespace: "image-service")
        func disk(_ name: String, bytes: Int) -> DiskCache? {
            guard bytes > 0 else { return nil }
            var disk = DiskCacheConfiguration(
                directory: directory.appendingPathComponent(name, isDirectory: true), maxDiskSize: bytes,
                maxEntrySize: max(configuration.maxSourceBytes, 1 << 20))
            disk.metricsFactory = metrics.factory
            disk.metricsPrefix = "\(prefix)_\(name)_disk"
            disk.logger = logger
            return DiskCache(configuration: disk)
        }
        let redis: RedisCache?
        if let urls = configuration.redis {
            var settings: RedisCacheConfiguration
            do {
                settings = try RedisCacheConfiguration(urlList: urls)
            } catch {
                throw ImageServiceConfigurationError("redis: \(error)")
            }
            settings.keyPrefix = configuration.redisKeyPrefix
            settings.fleetCoalescing = .init()
            settings.maxEntryBytes = max(settings.maxEntryBytes, configuration.maxSourceBytes)
            settings.metricsFactory = metrics.factory
            settings.metricsPrefix = "\(prefix)_redis"
            settings.logger = logger
            redis = RedisCache(configuration: settings)
        } else {
            redis = nil
        }
        let results = ServiceCache(
            kind: .result, memoryBytes: configuration.resultMemoryBytes,
            disk: disk("results", bytes: configuration.resultDiskBytes), redis: redis, metrics: metrics)
        let sources = ServiceCache(
            kind: .source, memoryBytes: configuration.sourceMemoryBytes,
            disk: disk("sources", bytes: configuration.sourceDiskBytes), redis: redis, metrics: metrics)

        var loader = HTTPLoaderConfiguration()
        loader.maximumResponseSize = configuration.maxSourceBytes
        loader.timeout = configuration.originTimeout
        loader.maximumTransferDuration = configuration.originTimeout
        loader.maxConcurrentDownloads = max(8, configuration.workers)
        loader.acceptedFormats = [.avif, .webp, .png, .jpeg, .gif]
        loader.metricsFactory = metrics.factory
        loader.metricsPrefix = "\(prefix)_origin_http"
        loader.logger = logger
        let clients = OriginClients(
            capacity: 64, loaderConfiguration: loader, connectTimeout: configuration.originTimeout)
        let fetcher = OriginFetcher(
            policy: policy, resolver: configuration.resolver ?? SystemResolver(ttl: configuration.dnsCacheSeconds),
            clients: clients, maxRedirects: configuration.maxRedirects, originTimeout: configuration.originTimeout,
            onRequest: {
                metrics.originRequests.increment()
                metrics.originInFlight.increment()
            },
            onRequestEnded: { metrics.originInFlight.decrement() })
        let renderer = Renderer(
            coders: coders, pool: WorkPool.cpu,
            limits: SourceLimits(maxPixels: configuration.maxSourcePixels, maxFrames: configuration.maxSourceFrames),
            encoding: encoding)
        return PipelineEngine(
            results: results, sources: sources, fetcher: fetcher, renderer: renderer,
            freshness: configuration.freshness, metrics: metrics,
            onShutdown: {
                redis?.shutdown()
                await clients.shutdown()
            })
    }
}
