import Foundation
import Hummingbird
import ImageService
import Logging

/// The adapter between Hummingbird and the ``ImageService/ImageService``: `GET /thumbnail` (and `HEAD`) becomes an
/// ``ImageService/ImageServiceRequest`` (the head as sent: path, raw query, headers), and the service's answer
/// becomes a Hummingbird response. Everything a request is judged by — signature, options, policy, deadline,
/// admission, freshness, ETag — is the service's. Thread-safe.
struct ThumbnailRoute: Sendable {
    let service: ImageService

    /// Bytes copied into one write, so an answer is never copied whole: the bytes waiting for a slow socket are
    /// counted (``ConnectionRegistry``'s output budget) as they are written.
    static let chunkSize = 64 << 10

    func respond(to request: Request, logger: Logger) async -> Response {
        let answer = await service.respond(to: ImageServiceRequest(request.head), logger: logger)
        let data = answer.body
        guard !data.isEmpty else { return Response(status: answer.status, headers: answer.headers) }
        let body = ResponseBody(contentLength: data.count) { writer in
            var offset = data.startIndex
            while offset < data.endIndex {
                let end = min(offset + Self.chunkSize, data.endIndex)
                try await writer.write(ByteBuffer(bytes: data[offset..<end]))
                offset = end
            }
            try await writer.finish(nil)
        }
        return Response(status: answer.status, headers: answer.headers, body: body)
    }
}
