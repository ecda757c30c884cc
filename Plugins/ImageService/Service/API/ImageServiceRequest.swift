import Foundation
import HTTPTypes

/// What the service reads from an HTTP request: the method, the path and raw query as the client sent them (the
/// signature covers both), and the headers that matter (`Accept`, `If-None-Match`, `If-Modified-Since`, and the
/// trace context). A web framework's adapter builds it from its own request type. Value type.
public struct ImageServiceRequest: Sendable {
    /// `GET` or `HEAD`; anything else is answered 405.
    public var method: HTTPRequest.Method
    /// The path as sent, mount prefix included (`/img/thumbnail`): signatures cover it.
    public var path: String
    /// The raw query string, percent-encoding kept, without the `?`.
    public var query: String
    /// The request's headers.
    public var headers: HTTPFields

    /// Creates a request.
    public init(method: HTTPRequest.Method = .get, path: String, query: String, headers: HTTPFields = [:]) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// The request of a swift-http-types head (Hummingbird's `request.head`): its path split at the first `?`.
    public init(_ head: HTTPRequest) {
        let target = head.path ?? "/"
        if let mark = target.firstIndex(of: "?") {
            self.init(
                method: head.method, path: String(target[..<mark]),
                query: String(target[target.index(after: mark)...]), headers: head.headerFields)
        } else {
            self.init(method: head.method, path: target, query: "", headers: head.headerFields)
        }
    }
}

/// What the service answers: a status, headers, and the body bytes (empty for `304` and `HEAD`).
///
/// Thumbnails are small and already whole when they are answered, so the body is one `Data`; an adapter writes
/// it as its framework's body type. Errors are `text/plain` with `Cache-Control: no-store`. Value type.
public struct ImageServiceResponse: Sendable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The headers (`Content-Type`, `Content-Length`, `ETag`, `Cache-Control`, `Vary`, `Last-Modified`,
    /// `Retry-After`, `Allow`…).
    ///
    /// Every answer but a `304` states its `Content-Length`; for a `HEAD` request it is the length the `GET`
    /// would send (RFC 9110 §9.3.2), so an adapter must pass it through as given rather than derive it from the
    /// empty body.
    public var headers: HTTPFields
    /// The body; empty for a `HEAD` request and a `304`.
    public var body: Data

    /// Creates a response.
    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

extension ImageServiceResponse {
    /// The response as sent for a request of this method: `Content-Length` states the representation's length
    /// (a `304` has none to state), and a `HEAD`'s body is dropped after it was measured. One place for every
    /// answer, thumbnails and failures alike, so no path can answer a `HEAD` with a body or a wrong length.
    func framed(head: Bool) -> ImageServiceResponse {
        var framed = self
        if status != .notModified, framed.headers[.contentLength] == nil {
            framed.headers[.contentLength] = String(body.count)
        }
        if head || status == .notModified { framed.body = Data() }
        return framed
    }
}
