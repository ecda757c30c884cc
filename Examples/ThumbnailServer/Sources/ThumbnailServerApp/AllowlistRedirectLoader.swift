import Foundation
import ThumbnailQuery
import WebImage

/// A loader that follows redirects itself, so that every hop is checked against the origin allowlist.
///
/// `HTTPLoader` (AsyncHTTPClient) follows redirects inside the client with no per-hop hook, so an allowlisted
/// origin answering `302 Location: http://elsewhere/` would make the server fetch from a host it must not reach.
/// This wrapper drives an `HTTPLoader` configured with ``innerConfiguration(_:)`` (automatic redirects off,
/// 301/302/303/307/308 delivered as responses) and follows `Location` itself: each target must be an http(s) URL
/// the allowlist accepts, hops are bounded, and a URL seen twice is a loop. A refused hop fails the load with
/// `invalidDownloadResponse` whose `underlying` is a ``RedirectRefused``, which the renderer maps to 403.
///
/// Threading: `requestImage` returns at once; completion runs on the inner loader's callback threads, once.
/// Cancelling the returned operation cancels the hop in flight.
struct AllowlistRedirectLoader: ImageLoader {
    /// Why a redirect was not followed.
    struct RedirectRefused: Error, Sendable, CustomStringConvertible {
        /// The URL that answered with the redirect.
        let from: URL
        /// The `Location` it pointed at (resolved), or the raw header when it was not a URL.
        let location: String
        /// What was wrong with it.
        let reason: String

        var description: String { "redirect from \(from.absoluteString) to \(location) refused: \(reason)" }
    }

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    let inner: HTTPLoader
    let allowlist: OriginAllowlist
    let maximumRedirects: Int

    /// The HTTP loader configuration this wrapper needs: `base` with automatic redirects off and the redirect
    /// statuses accepted (so their head and `Location` reach us instead of failing the transfer).
    static func innerConfiguration(_ base: HTTPLoaderConfiguration) -> HTTPLoaderConfiguration {
        var configuration = base
        configuration.maximumRedirects = 0
        configuration.acceptableStatusCodes.formUnion(redirectStatuses)
        return configuration
    }

    func canRequestImage(for url: URL) -> Bool { inner.canRequestImage(for: url) }

    /// The inner loader's answer: every hop goes through it with the same options and context.
    func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        inner.requestCarriesCredentials(for: url, options: options, context: context)
    }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let operation = CancellableOperation()
        follow(
            url, visited: [url], options: options, context: context, progress: progress, operation: operation,
            completion: completion)
        return operation
    }

    /// The URL-is-bad policy of the inner loader; a refused redirect is not the URL's fault forever (the origin
    /// may fix it), so it is never blocked.
    func shouldBlockFailedURL(_ url: URL, error: ImageError) -> Bool {
        error.underlying is RedirectRefused ? false : inner.shouldBlockFailedURL(url, error: error)
    }

    private func follow(
        _ url: URL, visited: [URL], options: ImageOptions, context: ImageContext,
        progress: (@Sendable (LoadProgress) -> Void)?, operation: CancellableOperation,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) {
        guard !operation.isCancelled else { return completion(.failure(.cancelled(stage: .download))) }
        let hop = inner.requestImage(with: url, options: options, context: context, progress: progress) { result in
            guard case .success(let loaded) = result, let status = loaded.response.statusCode,
                Self.redirectStatuses.contains(status)
            else { return completion(result) }
            switch next(after: loaded.response, from: url, visited: visited) {
            case .failure(let refused):
                completion(
                    .failure(
                        ImageError(
                            .invalidDownloadResponse, stage: .download, message: refused.description,
                            statusCode: status, underlying: refused)))
            case .success(let target):
                follow(
                    target, visited: visited + [target], options: options, context: context, progress: progress,
                    operation: operation, completion: completion)
            }
        }
        operation.onCancel { hop.cancel() }
    }

    /// The checked target of a redirect response.
    private func next(after response: ResponseMetadata, from url: URL, visited: [URL]) -> Result<URL, RedirectRefused> {
        guard let location = response.headers["location"], !location.isEmpty else {
            return .failure(RedirectRefused(from: url, location: "", reason: "no Location header"))
        }
        guard let target = URL(string: location, relativeTo: url)?.absoluteURL, target.host != nil else {
            return .failure(RedirectRefused(from: url, location: location, reason: "not a URL"))
        }
        guard allowlist.allows(target) else {
            return .failure(
                RedirectRefused(from: url, location: target.absoluteString, reason: "origin is not on the allowlist"))
        }
        guard visited.count <= maximumRedirects else {
            return .failure(
                RedirectRefused(
                    from: url, location: target.absoluteString, reason: "more than \(maximumRedirects) redirects"))
        }
        guard !visited.contains(target) else {
            return .failure(RedirectRefused(from: url, location: target.absoluteString, reason: "redirect loop"))
        }
        return .success(target)
    }
}
