import Foundation
import Hummingbird
import ImageCore
import Logging
import ThumbnailQuery

/// `GET /thumbnail?url=…&w=…&h=…[&fit=…&gravity=…&dpr=…&enlarge=…&q=…&format=…&anim=…&preset=…]&sig=…`.
///
/// Order: the signature (``URLSigner``; unsigned requests only with `allowUnsigned`), the query
/// (``ThumbnailQuery/OptionsParser``, 400 naming the parameter), the format by `Accept`, then the pipeline under
/// the request's deadline. The answer carries a strong `ETag` derived from the source's validators and the
/// options, `Cache-Control` with `max-age` and `stale-while-revalidate` (`private, no-store` for a source that
/// said so), the source's `Last-Modified`, and `Vary: Accept` when the format was negotiated. Thread-safe.
struct ThumbnailRoute: Sendable {
    let signer: URLSigner
    let allowUnsigned: Bool
    let parser: OptionsParser
    let pipeline: ThumbnailPipeline
    let cacheControl: CacheControlPolicy
    let requestTimeout: Double
    let canEncodeAVIF: Bool
    let metrics: ServerMetrics

    func respond(to request: Request, logger: Logger) async -> Response {
        metrics.httpInFlight.increment()
        defer { metrics.httpInFlight.decrement() }
        let response: Response
        var format = "none"
        do {
            let (answer, variesByAccept) = try await thumbnail(for: request)
            switch answer {
            case .thumbnail(let thumbnail):
                format = thumbnail.contentType.split(separator: "/").last.map(String.init) ?? "none"
                var headers = headers(
                    etag: thumbnail.etag, lastModified: thumbnail.lastModified, shareable: thumbnail.isShareable,
                    variesByAccept: variesByAccept)
                if ConditionalRequest.isNotModified(
                    ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince],
                    etag: thumbnail.etag, lastModified: thumbnail.lastModified)
                {
                    metrics.notModified.increment()
                    response = Response(status: .notModified, headers: headers)
                } else {
                    headers[.contentType] = thumbnail.contentType
                    response = Response(
                        status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: thumbnail.data))
                    )
                }
            case .notModified(let etag, let lastModified, let shareable):
                metrics.notModified.increment()
                response = Response(
                    status: .notModified,
                    headers: headers(
                        etag: etag, lastModified: lastModified, shareable: shareable, variesByAccept: variesByAccept))
            }
        } catch {
            let failure = Failure.from(error)
            if let reason = failure.rejection { metrics.rejected(reason) }
            logger.info(
                "thumbnail refused",
                metadata: [
                    "status": .stringConvertible(failure.status.code),
                    "reason": .string(failure.detail ?? failure.message),
                ])
            response = failure.response()
        }
        metrics.request(status: response.status.code, format: format)
        return response
    }

    private func thumbnail(for request: Request) async throws -> (ThumbnailPipeline.Answer, Bool) {
        let rawQuery = request.uri.query ?? ""
        try checkSignature(path: request.uri.path, query: rawQuery)
        let options = try parser.parse(try QueryString.pairs(rawQuery))
        let encoding = options.format.encoding(accept: request.headers[.accept], canEncodeAVIF: canEncodeAVIF)
        let pipeline = pipeline
        let ifNoneMatch = request.headers[.ifNoneMatch]
        let ifModifiedSince = request.headers[.ifModifiedSince]
        let answer = try await withDeadline(seconds: requestTimeout) {
            try await pipeline.answer(
                options, encoding: encoding, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince)
        }
        return (answer, options.format.variesByAccept)
    }

    /// Signed requests pass with any key; unsigned ones only when allowed (a wrong signature never passes).
    private func checkSignature(path: String, query: String) throws {
        guard signer.keyCount > 0 else {
            // No keys: a `sig` can't mean anything, and the server only starts like this with allowUnsigned.
            if allowUnsigned { return }
            throw URLSigner.Refusal.missing
        }
        let signed = query.split(separator: "&").contains { $0.hasPrefix("sig=") }
        if !signed && allowUnsigned { return }
        try signer.verify(path: path, query: query)
    }

    private func headers(etag: String, lastModified: String?, shareable: Bool, variesByAccept: Bool) -> HTTPFields {
        var headers: HTTPFields = [
            .eTag: etag, .cacheControl: shareable ? cacheControl.headerValue : CacheControlPolicy.noStore,
        ]
        if let lastModified { headers[.lastModified] = lastModified }
        if variesByAccept { headers[.vary] = "Accept" }
        return headers
    }
}
