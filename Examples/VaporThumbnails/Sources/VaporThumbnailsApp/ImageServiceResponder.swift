import Foundation
import HTTPTypes
import ImageService
import Vapor

/// The adapter between Vapor and the SDK's ``ImageService/ImageService``: a Vapor request becomes an
/// ``ImageService/ImageServiceRequest`` (method, the path and raw query as sent — a signature covers them —, the
/// headers), and the service's answer a Vapor response. Everything a request is judged by is the service's:
/// signature, options, source policy, deadline, admission with 429, freshness, ETag and 304.
public struct ImageServiceResponder: AsyncResponder {
    /// The service.
    public let service: ImageService

    /// Creates the responder.
    public init(service: ImageService) { self.service = service }

    public func respond(to request: Request) async throws -> Response {
        let answer = await service.respond(to: Self.serviceRequest(request), logger: request.logger)
        var headers = HTTPHeaders()
        for field in answer.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        // The headers as the service framed them: its `Content-Length` is the representation's, which for a HEAD
        // is not the empty body's (Vapor's other initialisers would set it to 0).
        return Response(
            status: HTTPResponseStatus(statusCode: answer.status.code, reasonPhrase: answer.status.reasonPhrase),
            version: request.version, headersNoUpdate: headers,
            body: answer.body.isEmpty ? .empty : .init(data: answer.body))
    }

    /// The service's view of a Vapor request.
    static func serviceRequest(_ request: Request) -> ImageServiceRequest {
        var fields = HTTPFields()
        for (name, value) in request.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return ImageServiceRequest(
            method: HTTPRequest.Method(request.method.rawValue) ?? .get, path: request.url.path,
            query: request.url.query ?? "", headers: fields)
    }
}
