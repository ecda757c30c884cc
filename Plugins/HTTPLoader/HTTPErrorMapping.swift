import AsyncHTTPClient
import ImageCore
import NIOCore
import NIOHTTP1

/// Turns AsyncHTTPClient and NIO errors into the SDK's ``ImageError`` codes, keeping the original as `underlying`.
///
/// Timeouts (connect, read, deadline, TLS handshake, pool) → `timedOut`; cancellation → `cancelled`; redirect
/// loops and limits → `invalidDownloadResponse`; a malformed URL → `invalidURL`; everything else a transport
/// can do — refused or reset connections, DNS and TLS failures, a body shorter than its Content-Length — →
/// `downloadFailed`. None of these except `invalidURL` makes the manager block the URL.
enum HTTPErrorMapping {
    private static let timeouts: [HTTPClientError] = [
        .readTimeout, .connectTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout,
        .writeTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout,
    ]
    private static let invalidURLs: [HTTPClientError] = [.invalidURL, .emptyHost, .emptyScheme]

    static func imageError(from error: any Error) -> ImageError {
        if let imageError = error as? ImageError { return imageError }
        if let clientError = error as? HTTPClientError {
            if clientError == .cancelled { return .cancelled(stage: .download) }
            if timeouts.contains(clientError) {
                return ImageError(.timedOut, stage: .download, message: "\(clientError)", underlying: clientError)
            }
            if clientError == .redirectCycleDetected || clientError == .redirectLimitReached {
                return ImageError(
                    .invalidDownloadResponse, stage: .download, message: "\(clientError)", underlying: clientError)
            }
            if invalidURLs.contains(clientError) {
                return ImageError(.invalidURL, stage: .request, message: "\(clientError)", underlying: clientError)
            }
        }
        if let channelError = error as? ChannelError, case .connectTimeout = channelError {
            return ImageError(.timedOut, stage: .download, message: "\(channelError)", underlying: channelError)
        }
        return ImageError(.downloadFailed, stage: .download, message: "\(error)", underlying: error)
    }

    /// True for failures a retry may fix: connection-level errors (not timeouts, not cancellation, not ours).
    static func isRetryableTransportError(_ error: ImageError) -> Bool {
        error.code == .downloadFailed && !(error.underlying is ImageError)
    }
}
