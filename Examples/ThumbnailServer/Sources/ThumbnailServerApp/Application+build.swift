import Foundation
import Hummingbird
import RedisCache
import ServiceLifecycle
import ThumbnailQuery
import WebImage

/// Builds the thumbnail server: routes, the SDK's manager (memory + disk cache, HTTP loader) and its counters.
///
/// Routes: `GET /thumbnail`, `GET /samples/{name}`, `GET /metrics`, `GET /` (gallery).
public func buildApplication(
    _ configuration: ThumbnailServerConfiguration, counters: ServerCounters = ServerCounters()
) async throws -> some ApplicationProtocol {
    for coder: any ImageCoder in [
        PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared,
    ] {
        CodersManager.shared.addCoder(coder)
    }
    var loaderConfiguration = HTTPLoaderConfiguration()
    loaderConfiguration.maximumResponseSize = configuration.maxSourceBytes
    let allowlist = OriginAllowlist(configuration.allowedOrigins)
    // Redirects are followed by the wrapper, which checks every hop against the allowlist.
    let loader = HTTPLoader(configuration: AllowlistRedirectLoader.innerConfiguration(loaderConfiguration))
    let redirectChecking = AllowlistRedirectLoader(
        inner: loader, allowlist: allowlist, maximumRedirects: configuration.maxRedirects)
    let disk = DiskCache(
        configuration: configuration.cacheDirectory.map { DiskCacheConfiguration(directory: $0) }
            ?? DiskCacheConfiguration(namespace: "thumbnail-server"))
    // With Redis: a third level shared by every replica, hits copied to the local disk, and fleet-wide
    // coalescing so N replicas missing one thumbnail make one origin request.
    let redis = try configuration.redis.map { urls in
        var redisConfiguration = try RedisCacheConfiguration(urlList: urls)
        redisConfiguration.keyPrefix = configuration.redisKeyPrefix
        redisConfiguration.fleetCoalescing = .init()
        return RedisCache(configuration: redisConfiguration, promotingHitsTo: disk)
    }
    let levels: [any ImageCacheProtocol] = [MemoryCache(), disk] + (redis.map { [$0] } ?? [])
    let manager = ImageManager(cache: CachesManager(levels), loader: LoadersManager(loaders: [redirectChecking]))
    let renderer = ThumbnailRenderer(
        manager: manager, maxSourcePixels: configuration.maxSourcePixels, quality: configuration.quality)
    let samples = try await WorkPool.cpu.run { try SampleImages.make() }

    let router = Router()
    router.get("/thumbnail") { request, _ -> Response in
        counters.increment(.requests)
        do {
            // The first value of each parameter, percent-decoded.
            let query = request.uri.queryParameters.reduce(into: [String: String]()) { query, parameter in
                if query[String(parameter.key)] == nil { query[String(parameter.key)] = String(parameter.value) }
            }
            let thumbnailRequest: ThumbnailRequest
            do throws(ThumbnailRequest.Invalid) {
                thumbnailRequest = try ThumbnailRequest(query: query, maxSide: configuration.maxThumbnailSide)
            } catch {
                throw HTTPError(.badRequest, message: error.message)
            }
            guard allowlist.allows(thumbnailRequest.source) else {
                counters.increment(.forbidden)
                throw HTTPError(.forbidden, message: "source origin is not on the allowlist")
            }
            let encoding = ContentNegotiation.encoding(
                accept: request.headers[.accept], canEncodeAVIF: CodersManager.shared.canEncode(to: .avif))
            let thumbnail: ThumbnailRenderer.Thumbnail
            do {
                thumbnail = try await renderer.render(thumbnailRequest, encoding: encoding)
            } catch let error as HTTPError where error.status == .forbidden {
                counters.increment(.forbidden)  // a redirect hop outside the allowlist
                throw error
            }
            counters.increment(thumbnail.cacheType == .none ? .cacheMisses : .cacheHits)

            var headers: HTTPFields = [
                .eTag: thumbnail.etag, .cacheControl: configuration.cacheControl, .vary: "Accept",
            ]
            if ContentNegotiation.matches(ifNoneMatch: request.headers[.ifNoneMatch], etag: thumbnail.etag) {
                counters.increment(.notModified)
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentType] = thumbnail.format.mimeType
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: thumbnail.data)))
        } catch {
            counters.increment(.errors)
            throw error
        }
    }
    router.get("/samples/{name}") { _, context -> Response in
        guard let name = context.parameters.get("name"), let sample = samples[name] else {
            throw HTTPError(.notFound)
        }
        counters.increment(.samplesServed)
        return Response(
            status: .ok, headers: [.contentType: sample.contentType, .cacheControl: configuration.cacheControl],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: sample.data)))
    }
    router.get("/metrics") { _, _ -> Response in
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: counters.text)))
    }
    router.get("/") { request, _ -> Response in
        let origin = "http://\(request.head.authority ?? "\(configuration.host):\(configuration.port)")"
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(
                byteBuffer: ByteBuffer(string: GalleryPage.html(origin: origin, samples: Array(samples.keys)))))
    }

    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
        services: [LoaderShutdownService(loader: loader, redis: redis)])
}

/// Shuts the HTTP loader's client (and the Redis connections) down when the application stops.
struct LoaderShutdownService: Service {
    let loader: HTTPLoader
    let redis: RedisCache?

    func run() async throws {
        try? await gracefulShutdown()
        redis?.shutdown()
        try await loader.shutdown()
    }
}
