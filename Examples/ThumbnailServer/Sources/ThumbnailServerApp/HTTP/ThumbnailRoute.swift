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
    let output: OutputBudget

    /// Bytes copied into one write: each write waits for the socket to take the previous one, so a client that
    /// does not read holds at most this (plus the socket's high-water mark) of copies, beside its answer's `Data`
    /// (counted against the ``OutputBudget`` while it is written).
    static let chunkSize = 64 << 10

    func respond(to request: Request, logger: Logger) async -> Response {
        let answer = await service.respond(to: ImageServiceRequest(request.head), logger: logger)
        let data = answer.body
        guard !data.isEmpty else { return Response(status: answer.status, headers: answer.headers) }
        let output = output
        let body = ResponseBody(contentLength: data.count) { writer in
            guard output.reserve(data.count) else { throw OutputBudget.Exhausted() }
            defer { output.release(data.count) }
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
