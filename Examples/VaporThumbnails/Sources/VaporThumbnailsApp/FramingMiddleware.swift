import ImageService
import Vapor

/// Refuses, on every route, a request the server can't take as framed (ImageService's ``FramingRefusal``): an
/// HTTP/1.1 request without exactly one `Host`, a transfer coding other than `chunked` (501), or `chunked` twice.
///
/// Vapor's NIO decoder read `Transfer-Encoding: gzip, chunked` as merely chunked and served the request, and served
/// one with two `Host` fields. The answer is the ThumbnailServer's, without `Connection: close`: Vapor 4 decides
/// whether a connection persists from the request alone and gives a middleware no way to close it, so the client's
/// next pipelined request is still read (as NIO framed it).
struct FramingMiddleware: AsyncMiddleware {
    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        guard
            let refusal = FramingRefusal(
                isHTTP11: request.version == .http1_1, hostFields: request.headers["host"].count,
                transferCodings: request.headers[canonicalForm: "transfer-encoding"].map(String.init))
        else { return try await next.respond(to: request) }
        var headers = HTTPHeaders()
        for field in refusal.response.headers where field.name != .connection {
            headers.add(name: field.name.canonicalName, value: field.value)
        }
        return Response(
            status: HTTPResponseStatus(statusCode: refusal.status.code), version: request.version,
            headersNoUpdate: headers, body: .empty)
    }
}
