import Foundation
import HTTPTypes

/// A request an HTTP/1.x front end must refuse before it reaches the service, because the server can't take it as
/// framed: an adapter judges every request by it and answers ``status`` with `Connection: close`.
///
/// Framing is the web server's, so the service can't judge it from an ``ImageServiceRequest`` (which has no
/// version); it is stated once here for every adapter. The ThumbnailServer's connection handler answers it after
/// the answers owed to the requests pipelined before it, then closes the connection; the Vapor example's middleware
/// answers it on every route (Vapor 4 gives a middleware no way to close the connection). Value type.
public enum FramingRefusal: Sendable, Equatable {
    /// RFC 9112 §3.2: an HTTP/1.1 request without a `Host`, or with more than one (400).
    case hostNotOnce
    /// RFC 9112 §6.1: a transfer coding other than `chunked` (`gzip, chunked`, say), which the server does not
    /// implement (501). NIO's decoder reads such a body as merely chunked, so a proxy in front that reads it
    /// otherwise would disagree with the server on where the request ended.
    case unknownTransferCoding
    /// `chunked` applied more than once (RFC 9112 §7.1 forbids it; 400).
    case chunkedTwice

    /// The refusal of a request, if any.
    ///
    /// - Parameters:
    ///   - isHTTP11: true for an HTTP/1.1 request (HTTP/1.0 may omit `Host`; HTTP/2 has `:authority` instead).
    ///   - hostFields: how many `Host` fields the request has.
    ///   - transferCodings: its `Transfer-Encoding` codings, each comma-separated element on its own.
    public init?(isHTTP11: Bool, hostFields: Int, transferCodings: [String]) {
        if isHTTP11, hostFields != 1 {
            self = .hostNotOnce
            return
        }
        let codings = transferCodings.map { $0.trimmingCharacters(in: [" ", "\t"]).lowercased() }
        if codings.contains(where: { $0 != "chunked" }) {
            self = .unknownTransferCoding
        } else if codings.count > 1 {
            self = .chunkedTwice
        } else {
            return nil
        }
    }

    /// The answer's status.
    public var status: HTTPResponse.Status {
        switch self {
        case .hostNotOnce, .chunkedTwice: .badRequest
        case .unknownTransferCoding: .notImplemented
        }
    }

    /// The answer: ``status``, an empty body, `Connection: close` and `Cache-Control: no-store`.
    public var response: ImageServiceResponse {
        ImageServiceResponse(
            status: status, headers: [.connection: "close", .contentLength: "0", .cacheControl: "no-store"])
    }
}
