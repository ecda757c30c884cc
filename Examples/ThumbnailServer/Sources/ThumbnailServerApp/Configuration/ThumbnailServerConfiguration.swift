import DiskCache
import Foundation
import ImageCore
import ImageService
import Logging
import Metrics

/// Everything the server is built with: the service's settings (``service``) and the server's own (listeners,
/// connection limits, lifecycle, logging). ``load(environment:arguments:)`` reads both from a JSON file and the
/// environment (see ``ConfigurationSetting`` for every name); tests set the fields directly.
///
/// The service's settings are read and written through this type as if they were its own
/// (`configuration.workers = 4` sets `service.workers`): they are declared, documented and defaulted once, in
/// ``ImageService/ImageServiceConfiguration``, so a setting the service gains is a setting of the server.
@dynamicMemberLookup
public struct ThumbnailServerConfiguration: Sendable {
    /// Signing, the source policy, limits, output, caches, workers and deadlines: everything an answer depends on.
    /// The server's defaults differ from the service's in two names: Redis keys start `thumbnail-server:`, metrics
    /// `thumbnail_`. ``ImageService/ImageServiceConfiguration/cacheDirectory`` nil means
    /// `~/.cache/thumbnail-server`.
    public var service: ImageServiceConfiguration = {
        var service = ImageServiceConfiguration()
        service.redisKeyPrefix = "thumbnail-server:"
        service.metricsPrefix = "thumbnail"
        return service
    }()

    /// A setting of ``service``, as if it were the server's own.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<ImageServiceConfiguration, Value>) -> Value {
        get { service[keyPath: keyPath] }
        set { service[keyPath: keyPath] = newValue }
    }

    // MARK: Network

    /// Address to bind (default 127.0.0.1).
    public var host = "127.0.0.1"
    /// Port to bind (default 8080; 0 picks a free one).
    public var port = 8080
    /// Address of the metrics listener (default 127.0.0.1: scrape from the same host or a sidecar).
    public var metricsHost = "127.0.0.1"
    /// Port of the Prometheus `/metrics` listener (default 9090; 0 picks a free one; nil: no listener).
    public var metricsPort: Int? = 9090

    // MARK: Operation

    /// Seconds between SIGTERM and closing the listener, while `/ready` answers 503 (default 0). The process exits
    /// at the latest `drainSeconds` + ``ImageService/ImageServiceConfiguration/requestTimeout`` after SIGTERM, whatever its clients do.
    public var drainSeconds = 0.0
    /// The limits of each connection: idle, header and write timeouts, and the connection cap.
    public var connectionLimits = ConnectionLimits()
    /// Bytes of answers being written at once across every connection (default 32 MiB): an answer beyond it is not
    /// written and its connection is closed, so clients that don't read can't pin more than this.
    public var maxPendingOutputBytes = 32 << 20
    /// Raise the soft limit on open files to the hard limit at start (default on).
    public var raisesFileLimit = true
    /// Back the pixel blocks of 2 MiB and more with transparent huge pages (default on; `PixelPool.usesHugePages`,
    /// which the server sets at start for the whole process). Off keeps small pages: for a machine whose THP
    /// `defrag` setting stalls faults on compaction, or to measure the difference.
    public var usesHugePages = true
    /// Serve the sample images under `/samples/` and the gallery at `/` (default off; `dev.json` turns it on).
    public var servesSamples = false
    /// The origin the gallery's links and sample sources use (`http://host:port` of this server by default). It
    /// comes from configuration only: never from a request's `Host`, or the gallery would sign for anyone.
    public var publicURL: String?
    /// Log level (`trace` … `critical`, default `info`).
    public var logLevel = "info"
    /// Log lines as JSON objects (default) or as text.
    public var logJSON = true
    /// The OTLP/HTTP endpoint the spans of every request go to (`http://collector:4318/v1/traces`), through
    /// swift-otel; nil (default): spans go to the process's `InstrumentationSystem` tracer, a no-op unless
    /// something bootstrapped one.
    public var tracesEndpoint: String?

    /// The defaults.
    public init() {}

    /// Sets the default quality of `format` (1...100).
    public mutating func setQuality(_ quality: Int, for format: ImageFormat) {
        service.quality[format] = min(100, max(1, quality))
    }

    /// The ``ImageService/ImageServiceConfiguration`` the server runs: ``service`` with the cache directory
    /// resolved and the server's logger and metrics.
    func service(logger: Logger, metricsFactory: any MetricsFactory) -> ImageServiceConfiguration {
        var service = self.service
        service.cacheDirectory =
            service.cacheDirectory ?? DiskCacheConfiguration.defaultDirectory(namespace: "thumbnail-server")
        service.logger = logger
        service.metricsFactory = metricsFactory
        return service
    }
}
