import Foundation

/// Everything the server is built with. `fromEnvironment()` reads the same fields from environment variables.
public struct ThumbnailServerConfiguration: Sendable {
    /// Address to bind (default 127.0.0.1).
    public var host = "127.0.0.1"
    /// Port to bind (default 8080; 0 picks a free one).
    public var port = 8080
    /// Source images may only come from these origins: a bare host (`images.example.com`, any scheme and port)
    /// or a full origin (`https://cdn.example.com:8443`). Default: this machine, which serves `/samples/`.
    public var allowedOrigins = ["127.0.0.1", "localhost"]
    /// Redirects followed per source, each hop checked against ``allowedOrigins`` (default 5).
    public var maxRedirects = 5
    /// The largest source image downloaded, in bytes (the HTTP loader's maximum response size).
    public var maxSourceBytes = 20 << 20
    /// The largest source image decoded, in pixels; checked from the header before decoding.
    public var maxSourcePixels = 40_000_000
    /// The largest width or height a client may ask for.
    public var maxThumbnailSide = 2048
    /// Quality of JPEG and lossy WebP thumbnails, 0...1.
    public var quality = 0.8
    /// The `Cache-Control` of thumbnails and samples.
    public var cacheControl = "public, max-age=86400"
    /// Where the disk cache lives; nil uses `~/.cache/thumbnail-server` (or `$XDG_CACHE_HOME`).
    public var cacheDirectory: URL?
    /// A Redis shared by every replica, as a third cache level with fleet-wide coalescing: one URL
    /// (`redis://host:6379`, `rediss://…`, `redis+unix:///path`) or the comma-separated seeds of a Redis Cluster.
    /// Nil (the default) runs without Redis.
    public var redis: String?
    /// Prefix of the keys the server writes to Redis (default `thumbnail-server:`).
    public var redisKeyPrefix = "thumbnail-server:"

    /// The defaults.
    public init() {}

    /// The defaults overridden by `HOST`, `PORT`, `ALLOWED_ORIGINS` (comma-separated), `MAX_SOURCE_BYTES`,
    /// `MAX_SOURCE_PIXELS`, `CACHE_DIR` and `REDIS_URL`, then by the command line's `--redis URL` (or `--redis=URL`).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        arguments: [String] = CommandLine.arguments
    ) -> Self {
        var configuration = Self()
        configuration.redis = environment["REDIS_URL"]
        for (index, argument) in arguments.enumerated() {
            if argument == "--redis", index + 1 < arguments.count { configuration.redis = arguments[index + 1] }
            if argument.hasPrefix("--redis=") { configuration.redis = String(argument.dropFirst("--redis=".count)) }
        }
        if let host = environment["HOST"] { configuration.host = host }
        if let port = environment["PORT"].flatMap(Int.init) { configuration.port = port }
        if let origins = environment["ALLOWED_ORIGINS"] {
            configuration.allowedOrigins = origins.split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        }
        if let bytes = environment["MAX_SOURCE_BYTES"].flatMap(Int.init) { configuration.maxSourceBytes = bytes }
        if let pixels = environment["MAX_SOURCE_PIXELS"].flatMap(Int.init) { configuration.maxSourcePixels = pixels }
        if let directory = environment["CACHE_DIR"] {
            configuration.cacheDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        }
        return configuration
    }
}
