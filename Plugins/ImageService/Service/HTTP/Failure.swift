import Foundation
import HTTPTypes
import ImageCore
import ImageServiceQuery

/// A request that ends without a thumbnail: the status a client can act on, a message, and for load refusals
/// how long to wait.
struct Failure: Error, Sendable {
    let status: HTTPResponse.Status
    let message: String
    let retryAfter: Int?
    /// The `thumbnail_rejected_total` reason, for refusals caused by load.
    let rejection: String?
    /// What the log gets beyond `message` (the client never sees it).
    let detail: String?

    init(
        _ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil, rejection: String? = nil,
        detail: String? = nil
    ) {
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
        self.rejection = rejection
        self.detail = detail
    }

    /// The failure for any error the pipeline throws.
    static func from(_ error: any Error) -> Failure {
        switch error {
        case let failure as Failure: return failure
        case let invalid as OptionsParser.Invalid: return Failure(.badRequest, invalid.message)
        case let invalid as QueryString.Invalid: return Failure(.badRequest, "bad percent-encoding in \(invalid.pair)")
        case let refusal as URLSigner.Refusal: return Failure(.forbidden, refusal.description)
        case let refusal as SourceRefusal:
            return Failure(.forbidden, "source refused: \(refusal.publicMessage)", detail: refusal.description)
        case let fault as OriginFault: return Failure(.badGateway, "source: \(fault.description)")
        case is WorkerPool.Overloaded:
            return Failure(.tooManyRequests, "the server is busy", retryAfter: 1, rejection: "queue_full")
        case is DeadlineExceeded:
            return Failure(.gatewayTimeout, "the request took longer than its deadline", rejection: "deadline")
        case let failure as SystemResolver.Failure:
            return Failure(.badGateway, "source host does not resolve", detail: failure.description)
        case is CancellationError: return Failure(.serviceUnavailable, "the request was cancelled", retryAfter: 1)
        case let error as ImageError: return from(error)
        default: return Failure(.badGateway, "source: \(error)")
        }
    }

    /// Maps the SDK's error codes to the status a client can act on.
    static func from(_ error: ImageError) -> Failure {
        let message = "source image: \(error.code) (\(error.message ?? error.stage.rawValue))"
        switch error.code {
        case .imageTooLarge, .downloadTooLarge: return Failure(.contentTooLarge, message)
        case .badImageData, .noCoder, .invalidDownloadContentType: return Failure(.unsupportedMediaType, message)
        case .invalidDownloadStatusCode where error.statusCode == 404 || error.statusCode == 410:
            return Failure(.notFound, message)
        case .timedOut: return Failure(.gatewayTimeout, message)
        case .cancelled: return Failure(.serviceUnavailable, message, retryAfter: 1)
        case .transformFailed, .encodeFailed: return Failure(.internalServerError, message)
        default: return Failure(.badGateway, message)
        }
    }

    /// The response: the message as plain text, `Retry-After` when set, `Allow` on a 405, never cached.
    func response() -> ImageServiceResponse {
        var headers: HTTPFields = [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        // RFC 9110 §15.5.6: a 405 names the methods the resource takes.
        if status == .methodNotAllowed { headers[.allow] = "GET, HEAD" }
        return ImageServiceResponse(status: status, headers: headers, body: Data((message + "\n").utf8))
    }
}
