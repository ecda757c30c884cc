import Foundation
import ImageCore
import ImageServiceQuery
import Logging
import Metrics
import Tracing

/// Everything an ``ImageService`` is built with: signing, the source policy, what a request may ask for, output,
/// freshness, caches, admission and deadlines, and where metrics, logs and spans go.
///
/// The defaults are a safe production service with one exception that must be chosen: either
/// ``signingKeys`` or ``allowUnsigned``. Network limits of the connection itself (header and idle timeouts, a
/// connection cap, bounded output) belong to the adapter that owns the connections. Value type.
public struct ImageServiceConfiguration: Sendable {
    // MARK: Signing

    /// HMAC-SHA256 keys for signed URLs (hex, or `base64:…`, at least 16 bytes); the first signs, all verify.
    public var signingKeys: [String] = []
    /// Serve unsigned requests (a wrong signature is still refused). Off by default.
    public var allowUnsigned = false

    // MARK: Source policy

    /// Hosts sources may come from (``/ImageServiceQuery/HostAllowlist`` entries); empty: any public host.
    public var allowedHosts: [String] = []
    /// Address blocks exempt from the refusal of loopback, private and link-local addresses (CIDR).
    public var allowedAddresses: [String] = []
    /// Redirects followed per source, each hop checked like the first (default 5).
    public var maxRedirects = 5
    /// Seconds DNS answers are reused (default 30; 0: resolve every time).
    public var dnsCacheSeconds = 30.0
    /// The resolver of source host names; nil uses the system's.
    public var resolver: (any HostResolver)?
    /// The largest source downloaded, in bytes (default 20 MiB).
    public var maxSourceBytes = 20 << 20
    /// The largest source decoded, in pixels per frame and in frames × pixels for a kept animation (default 40 MP).
    public var maxSourcePixels = 40_000_000
    /// The most frames an animated source may have (default 500).
    public var maxSourceFrames = 500

    // MARK: What a request may ask for

    /// The largest box side, after the device-pixel ratio (default 2048).
    public var maxSide = 2048
    /// Allowed `w` values (empty: any up to ``maxSide``).
    public var allowedWidths: [Int] = []
    /// Allowed `h` values (empty: any).
    public var allowedHeights: [Int] = []
    /// The largest device-pixel ratio (default 4).
    public var maxDPR = 4.0
    /// Accept `anim=1`. Default on.
    public var allowAnimation = true
    /// Named presets: name → query string; `default` applies to every request.
    public var presets: [String: String] = [:]
    /// Accept presets only (`url`, `preset`, `sig`, `expires`).
    public var presetsOnly = false

    // MARK: Output

    /// Default quality 1...100 per format (JPEG and WebP 80, AVIF 60).
    public var quality: [ImageFormat: Int] = [.jpeg: 80, .webp: 80, .avif: 60]
    /// The butteraugli distance (max norm) `q=auto` keeps per format: the lowest quality whose output stays within
    /// it, never above the format's ``quality``; a format not listed uses its fixed quality. The defaults are the
    /// median distances fixed q 80 reached on the corpus photos at 256–512 px (Benchmarks/RESULTS.md, "Perceptual
    /// quality target"): JPEG 3.0, WebP 3.0, AVIF 2.0. A search costs 2–4 encodes, each measured (about 50 ms of
    /// CPU at 256 px, 150 ms at 512 px per probe); its result is cached like any other.
    public var perceptualDistance: [ImageFormat: Double] = [.jpeg: 3.0, .webp: 3.0, .avif: 2.0]
    /// Encoder effort per format; a format not listed encodes at `.balanced`. AVIF's default is `.balanced`
    /// (libavif speed 6, Pillow's and so thumbor's default): its files are 8–10 % smaller than `.fast`'s (speed 10,
    /// libaom's realtime mode) on photos at 512 px, for 0.1–0.2 s more CPU per AVIF thumbnail on this project's
    /// 2-core machine (Benchmarks/proxy). `.fast` is the choice for a service that makes many AVIF thumbnails and
    /// serves each few times.
    public var effort: [ImageFormat: EncodeEffort] = [.avif: .balanced]
    /// Progressive JPEG output.
    public var progressiveJPEG = false
    /// `Cache-Control` of answers; `max-age` is further capped by the source's own lifetime.
    public var cacheControl = CacheControlPolicy()
    /// How long sources are reused before a revalidation.
    public var freshness = FreshnessPolicy()

    // MARK: Caches

    /// Bytes of encoded thumbnails kept in memory (default 16 MiB).
    public var resultMemoryBytes = 16 << 20
    /// Bytes of sources kept in memory (default 16 MiB).
    public var sourceMemoryBytes = 16 << 20
    /// Bytes of thumbnails on disk (default 1 GiB; 0: no disk level).
    public var resultDiskBytes = 1 << 30
    /// Bytes of sources on disk (default 2 GiB; 0: no disk level).
    public var sourceDiskBytes = 2 << 30
    /// Where the disk levels live (`results/`, `sources/`); nil: `~/.cache/image-service`.
    public var cacheDirectory: URL?
    /// A Redis shared by every replica: one URL or the comma-separated seeds of a cluster; nil: none.
    public var redis: String?
    /// Prefix of the service's Redis keys.
    public var redisKeyPrefix = "image-service:"

    // MARK: Admission and deadlines

    /// Requests fetching or rendering at once (default twice the cores: a worker also waits on its origin).
    public var workers = 2 * ProcessInfo.processInfo.activeProcessorCount
    /// Requests waiting for a worker before the service answers 429 (default 64).
    public var queueLimit = 64
    /// Seconds one request may take, all of it — queueing, every origin hop, decode, encode — before it is
    /// answered 504 and its worker and queue slot are given back (default 30).
    public var requestTimeout = 30.0
    /// Seconds an origin may take to connect, or stay silent mid-transfer, on one hop (default 10; the request's
    /// deadline bounds the hop too).
    public var originTimeout = 10.0

    // MARK: Observability

    /// Where the service logs (refusals at `info`, failures at `warning`).
    public var logger = Logger(label: "image-service")
    /// Where metrics go; nil: the process's `MetricsSystem`.
    public var metricsFactory: (any MetricsFactory)?
    /// The prefix of every metric name (`<prefix>_requests_total`…; default `image_service`).
    public var metricsPrefix = "image_service"
    /// Where spans go; nil: the process's `InstrumentationSystem.tracer`.
    public var tracer: (any Tracer)?

    /// The defaults.
    public init() {}
}
