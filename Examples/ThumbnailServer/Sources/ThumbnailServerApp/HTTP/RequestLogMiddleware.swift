import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Gives every request an id and logs one structured line when it is answered.
///
/// The id is the client's `X-Request-Id` when it is 1–64 characters of letters, digits, `.`, `_` and `-` (so a
/// front proxy's id carries through), else a new random one; it goes into the request's logger metadata as
/// `request_id` (every log line of the request carries it) and back in the response's `X-Request-Id`. The access
/// line has method, path, status and duration in milliseconds. Thread-safe.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    static var requestIDField: HTTPField.Name { HTTPField.Name("X-Request-Id")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        let id = Self.requestID(from: request.headers[Self.requestIDField])
        context.logger[metadataKey: "request_id"] = .string(id)
        let start = ContinuousClock.now
        var status = 500
        defer {
            let elapsed = (ContinuousClock.now - start).seconds * 1000
            context.logger.info(
                "request",
                metadata: [
                    "method": .string(request.method.rawValue), "path": .string(request.uri.path),
                    "status": .stringConvertible(status), "ms": .string(String(format: "%.1f", elapsed)),
                ])
        }
        do {
            var response = try await next(request, context)
            response.headers[Self.requestIDField] = id
            status = response.status.code
            return response
        } catch let error as any HTTPResponseError {
            status = error.status.code
            var response = try error.response(from: request, context: context)
            response.headers[Self.requestIDField] = id
            return response
        }
    }

    static func requestID(from header: String?) -> String {
        if let header, (1...64).contains(header.count),
            header.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") })
        {
            return header
        }
        return UUID().uuidString.lowercased()
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
