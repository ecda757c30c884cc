import Foundation
import Hummingbird
import ImageCore
import ImageService
import Synchronization

/// `GET /samples/{name}` (images the server makes at start-up, a local origin for the gallery and the tests) and
/// `GET /` (the gallery of their thumbnails).
///
/// The gallery's page comes from configuration alone: its sample sources live at the configured public URL
/// (``ThumbnailServerConfiguration/publicURL``, else the address the server bound), and its links are signed for
/// those sources only. Nothing a request says — its `Host` above all — reaches the page or a signature, so the
/// gallery signs nothing for a client.
enum SampleRoutes {
    static func add(
        to router: Router<BasicRequestContext>, metrics: ServerMetrics, origin: GalleryOrigin, service: ImageService
    ) async throws {
        let samples = try await WorkPool.cpu.run { try SampleImages.make() }
        router.get("/samples/{name}") { _, context -> Response in
            guard let name = context.parameters.get("name"), let sample = samples[name] else {
                throw HTTPError(.notFound)
            }
            metrics.samplesServed.increment()
            return Response(
                status: .ok,
                headers: [
                    .contentType: sample.contentType, .cacheControl: "public, max-age=86400",
                    .eTag: "\"sample-\(sample.data.count)\"", .lastModified: "Tue, 01 Sep 2026 00:00:00 GMT",
                ],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: sample.data)))
        }
        router.get("/") { _, _ -> Response in
            guard let origin = origin.value else { throw HTTPError(.serviceUnavailable) }
            let page = GalleryPage.html(origin: origin, samples: Array(samples.keys)) { query in
                service.sign(path: "/thumbnail", query: query) ?? "/thumbnail?\(query)"
            }
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
        }
    }
}

/// Where the gallery's sample sources live: the configured public URL, else `http://host:port` of the address the
/// server bound (known once it runs). Thread-safe.
final class GalleryOrigin: Sendable {
    private let origin = Mutex<String?>(nil)
    private let configured: String?
    private let host: String

    init(configured: String?, host: String) {
        self.configured = configured
        self.host = host
    }

    var value: String? { configured ?? origin.withLock { $0 } }

    func bound(port: Int) {
        let host = host.contains(":") ? "[\(host)]" : host
        origin.withLock { $0 = "http://\(host):\(port)" }
    }
}
