import DiskCache
import Foundation
import ImageCore
import ImageService
import Logging
import Metrics

/// Everything the server is built with. ``load(environment:arguments:)`` reads it from a JSON file and the
/// environment (see ``ConfigurationSetting`` for every name); tests set the fields directly.
public struct ThumbnailServerConfiguration: Sendable {
    // MARK: Network

    /// Address to bind (default 127.0.0.1).
    public var host = "127.0.0.1"
    /// Port to bind (default 8080; 0 picks a free one).
    public var port = 8080
    /// Address of the metrics listener (default 127.0.0.1: scrape from the same host or a sidecar).
    public var metricsHost = "127.0.0.1"
    /// Port of the Prometheus `/metrics` listener (default 9090; 0 picks a free one; nil: no listener).
    public var metricsPort: Int? = 9090

    // MARK: Security

    /// HMAC-SHA256 keys for signed URLs (hex, or `base64:…`); the first signs, all verify (rotation).
    public var signingKeys: [String] = []
    /// Serve unsigned requests. Off by default: then every request must carry a valid `sig`.
    public var allowUnsigned = false
    /// Hosts sources may come from (``ImageService/HostAllowlist`` entries); empty: any public host.
    public var allowedHosts: [String] = []
    /// Address blocks exempt from the refusal of loopback, private and link-local addresses (CIDR), e.g. the
    /// test origin `127.0.0.1/32` or an origin network `10.1.0.0/16`.
    public var allowedAddresses: [String] = []
    /// Redirects followed per source, each hop checked like the first (default 5).
    public var maxRedirects = 5
    /// The largest source downloaded, in bytes (default 20 MiB).
    public var maxSourceBytes = 20 << 20
    /// The largest source decoded, in pixels per frame, and in frames × pixels for an animation kept animated
    /// (default 40 MP); checked from the header before any pixel is decoded.
    public var maxSourcePixels = 40_000_000
    /// The most frames an animated source may have (default 500).
    public var maxSourceFrames = 500
    /// The largest box side a request may ask for, after the device-pixel ratio (default 2048).
    public var maxThumbnailSide = 2048
    /// Allowed `w` values (empty: any up to ``maxThumbnailSide``).
    public var allowedWidths: [Int] = []
    /// Allowed `h` values (empty: any).
    public var allowedHeights: [Int] = []
    /// The largest device-pixel ratio (default 4).
    public var maxDPR = 4.0
    /// Accept `anim=1` (keep animations animated, every frame resized within the source limits). Default on.
    public var allowAnimation = true
    /// Named presets: name → query string (`thumb` → `w=200&h=200&fit=cover`); `default` applies to all.
    public var presets: [String: String] = [:]
    /// Accept presets only (`url`, `preset`, `sig`, `expires`).
    public var presetsOnly = false

    // MARK: Output

    /// Quality 1...100 per format (JPEG, WebP, AVIF).
    var quality: [ImageFormat: Int] = [.jpeg: 80, .webp: 80, .avif: 60]
    /// Progressive JPEG output.
    public var progressiveJPEG = false
    /// `Cache-Control` of thumbnails (`max-age` is further capped by the source's own lifetime).
    public var cacheControl = CacheControlPolicy()
    /// How long sources are reused before they are revalidated (`SOURCE_MIN_TTL`, `SOURCE_MAX_TTL`,
    /// `SOURCE_DEFAULT_TTL`).
    public var freshness = FreshnessPolicy()

    // MARK: Caches

    /// Bytes of encoded thumbnails kept in memory (default 16 MiB: ~400 thumbnails of 40 KB; the disk and a CDN
    /// keep the rest).
    public var resultMemoryBytes = 16 << 20
    /// Bytes of source images kept in memory (default 16 MiB: a few dozen photos, so several sizes asked of one
    /// source in a row skip the disk).
    public var sourceMemoryBytes = 16 << 20
    /// Bytes of thumbnails on disk (default 1 GiB).
    public var resultDiskBytes = 1 << 30
    /// Bytes of sources on disk (default 2 GiB).
    public var sourceDiskBytes = 2 << 30
    /// Where the disk caches live (`results/` and `sources/` inside); nil uses `~/.cache/thumbnail-server`.
    public var cacheDirectory: URL?
    /// A Redis shared by every replica: one URL or the comma-separated seeds of a Redis Cluster; nil: none.
    public var redis: String?
    /// Prefix of the server's Redis keys (default `thumbnail-server:`).
    public var redisKeyPrefix = "thumbnail-server:"

    // MARK: Operation

    /// Requests rendered at once (default twice the cores: a worker also waits on its origin).
    public var workers = 2 * ProcessInfo.processInfo.activeProcessorCount
    /// Requests waiting for a worker before the server answers 429 (default 64).
    public var queueLimit = 64
    /// Seconds a request may take, queueing included, before it is answered 504 (default 30).
    public var requestTimeout = 30.0
    /// Seconds an origin may take to answer and send (default 10).
    public var originTimeout = 10.0
    /// Seconds between SIGTERM and closing the listener, while `/ready` answers 503 (default 0). The process exits
    /// at the latest `drainSeconds` + ``requestTimeout`` after SIGTERM, whatever its clients do.
    public var drainSeconds = 0.0
    /// The limits of each connection: idle, header and write timeouts, and the connection cap.
    public var connectionLimits = ConnectionLimits()
    /// Bytes of answers being written at once across every connection (default 32 MiB): an answer beyond it is not
    /// written and its connection is closed, so clients that don't read can't pin more than this.
    public var maxPendingOutputBytes = 32 << 20
    /// Raise the soft limit on open files to the hard limit at start (default on).
    public var raisesFileLimit = true
    /// Seconds DNS answers are reused (default 30; 0: resolve every time).
    public var dnsCacheSeconds = 30.0
    /// Serve the sample images under `/samples/` and the gallery at `/` (default off; `dev.json` turns it on).
    public var servesSamples = false
    /// The origin the gallery's links and sample sources use (`http://host:port` of this server by default). It
    /// comes from configuration only: never from a request's `Host`, or the gallery would sign for anyone.
    public var publicURL: String?
    /// Log level (`trace` … `critical`, default `info`).
    public var logLevel = "info"
    /// Log lines as JSON objects (default) or as text.
    public var logJSON = true
    /// The resolver of source host names; nil uses the system's (tests inject answers here).
    public var resolver: (any HostResolver)?

    /// The defaults.
    public init() {}

    /// The quality used for `format` when a request gives none.
    public func quality(for format: ImageFormat) -> Int? { quality[format] }

    /// Sets the default quality of `format` (1...100).
    public mutating func setQuality(_ quality: Int, for format: ImageFormat) {
        self.quality[format] = min(100, max(1, quality))
    }

    /// The ``ImageService/ImageServiceConfiguration`` of these settings.
    func service(logger: Logger, metricsFactory: any MetricsFactory) -> ImageServiceConfiguration {
        var service = ImageServiceConfiguration()
        service.signingKeys = signingKeys
        service.allowUnsigned = allowUnsigned
        service.allowedHosts = allowedHosts
        service.allowedAddresses = allowedAddresses
        service.maxRedirects = maxRedirects
        service.dnsCacheSeconds = dnsCacheSeconds
        service.resolver = resolver
        service.maxSourceBytes = maxSourceBytes
        service.maxSourcePixels = maxSourcePixels
        service.maxSourceFrames = maxSourceFrames
        service.maxSide = maxThumbnailSide
        service.allowedWidths = allowedWidths
        service.allowedHeights = allowedHeights
        service.maxDPR = maxDPR
        service.allowAnimation = allowAnimation
        service.presets = presets
        service.presetsOnly = presetsOnly
        service.quality = quality
        service.progressiveJPEG = progressiveJPEG
        service.cacheControl = cacheControl
        service.freshness = freshness
        service.resultMemoryBytes = resultMemoryBytes
        service.sourceMemoryBytes = sourceMemoryBytes
        service.resultDiskBytes = resultDiskBytes
        service.sourceDiskBytes = sourceDiskBytes
        service.cacheDirectory =
            cacheDirectory ?? DiskCacheConfiguration.defaultDirectory(namespace: "thumbnail-server")
        service.redis = redis
        service.redisKeyPrefix = redisKeyPrefix
        service.workers = workers
        service.queueLimit = queueLimit
        service.requestTimeout = requestTimeout
        service.originTimeout = originTimeout
        service.logger = logger
        service.metricsFactory = metricsFactory
        service.metricsPrefix = "thumbnail"
        return service
    }
}
