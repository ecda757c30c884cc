import Foundation
import ImageCore

/// The rules of one redirect hop, as a pure function: what the loader sends next, or why it stops.
///
/// The loader follows redirects itself (AsyncHTTPClient's following is off) so that every hop passes through
/// here and through ``HTTPLoaderConfiguration/redirectFilter`` before anything is sent to the target. The rules
/// are the ones browsers and AsyncHTTPClient apply: a limit on hops, no cycles, only `http`/`https`, method
/// rewriting for 301/302/303, and credentials dropped when a hop leaves the origin.
enum RedirectPolicy {
    /// What to do with a response.
    enum Decision: Sendable {
        /// Not a redirect the loader follows: the response is the final one.
        case final
        /// Send `request` next.
        case follow(ImageRequest)
        /// Stop the transfer with `error`.
        case fail(ImageError)
    }

    /// Statuses that redirect when they carry a `Location`.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether `status` is one of ``redirectStatuses``; asked of every response head, so a status outside 3xx is
    /// answered without hashing.
    static func isRedirect(_ status: Int) -> Bool { status >= 300 && status < 400 && redirectStatuses.contains(status) }

    /// Headers that carry the caller's credentials; never sent to another origin.
    static let credentialHeaders = ["authorization", "proxy-authorization", "cookie"]

    /// Decides the next hop after `request` was answered with `status` and `location`.
    ///
    /// - Parameters:
    ///   - redirects: Hops already followed in this attempt.
    ///   - visited: Absolute strings of every URL requested in this attempt, the current one included.
    ///   - maximum: ``HTTPLoaderConfiguration/maximumRedirects``; 0 makes every response final.
    static func decide(
        after request: ImageRequest, status: Int, location: String?, redirects: Int, visited: Set<String>,
        maximum: Int
    ) -> Decision {
        guard maximum > 0, redirectStatuses.contains(status), let location, !location.isEmpty else { return .final }
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
            target.host?.isEmpty == false
        else {
            return .fail(failure("redirect to an unusable location \(location.prefix(200))"))
        }
        guard redirects < maximum else { return .fail(failure("more than \(maximum) redirects")) }
        guard !visited.contains(target.absoluteString) else {
            return .fail(failure("redirect cycle back to \(target.absoluteString)"))
        }
        var next = request
        next.url = target
        let method = request.method.uppercased()
        if (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST") {
            next.method = "GET"
        }
        if !sameOrigin(request.url, target) {
            next.headers.removeAll { credentialHeaders.contains($0.name.lowercased()) }
        }
        return .follow(next)
    }

    /// Same scheme, host and port (default ports filled in).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }

    private static func failure(_ message: String) -> ImageError {
        ImageError(.invalidDownloadResponse, stage: .download, message: message)
    }
}
