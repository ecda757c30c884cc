import Foundation
import Hummingbird
import ImageCore
import ThumbnailQuery

/// `GET /samples/{name}` (images the server makes at start-up, a local origin for the gallery and the tests) and
/// `GET /` (the gallery of their thumbnails).
enum SampleRoutes {
    /// - Parameter signer: signs the gallery's thumbnail links; nil leaves them unsigned.
    static func add(
        to router: Router<BasicRequestContext>, metrics: ServerMetrics, host: String, port: Int, signer: URLSigner?
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
        router.get("/") { request, _ -> Response in
            let origin = "http://\(request.head.authority ?? "\(host):\(port)")"
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody(
                    byteBuffer: ByteBuffer(
                        string: GalleryPage.html(origin: origin, samples: Array(samples.keys)) { query in
                            signer.map { $0.sign(path: "/thumbnail", query: query) } ?? "/thumbnail?\(query)"
                        })))
        }
    }
}
