import Foundation
import Synchronization

/// A minimal in-memory cookie jar for loads with ``ImageOptions/handleCookies``.
///
/// Scope: what image CDNs use (session and signed-access cookies). It stores `Set-Cookie` answers (including
/// those on redirects) by domain, path and name; honours `Domain`, `Path`, `Max-Age`, `Expires` (IMF-fixdate),
/// `Secure`; and sends matching, unexpired cookies as one `Cookie` header. Not implemented: the public-suffix
/// list (a `Domain=com` cookie is refused only by requiring a dot inside the domain), `SameSite` (no browsing
/// context on a server), persistence. Thread-safe (a `Mutex`).
public final class HTTPCookieJar: Sendable {
    struct Cookie: Sendable, Equatable {
        var name: String
        var value: String
        var domain: String
        /// True when the cookie came without `Domain` and matches only its origin host.
        var hostOnly: Bool
        var path: String
        var secure: Bool
        var expires: Date?
    }

    private let cookies = Mutex<[Cookie]>([])

    /// Creates an empty jar.
    public init() {}

    /// Number of stored cookies (expired ones included until the next lookup).
    public var count: Int { cookies.withLock { $0.count } }

    /// Removes every cookie.
    public func removeAll() { cookies.withLock { $0.removeAll() } }

    /// Stores the cookies of `setCookieHeaders` received from `url`.
    public func store(setCookieHeaders: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased() else { return }
        let parsed = setCookieHeaders.compactMap { Self.parse($0, host: host, requestPath: url.path, now: now) }
        guard !parsed.isEmpty else { return }
        cookies.withLock { jar in
            for cookie in parsed {
                jar.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                if let expires = cookie.expires, expires <= now { continue }  // an expired cookie deletes
                jar.append(cookie)
            }
        }
    }

    /// The `Cookie` header value for a request to `url`, or nil when no cookie matches.
    public func cookieHeader(for url: URL, now: Date = Date()) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let matching = cookies.withLock { jar -> [Cookie] in
            jar.removeAll { $0.expires.map { $0 <= now } ?? false }
            return jar.filter { cookie in
                (cookie.hostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain))
                    && Self.pathMatches(path, cookie.path) && (secure || !cookie.secure)
            }
        }
        guard !matching.isEmpty else { return nil }
        // RFC 6265 §5.4: longer paths first.
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }
            .joined(separator: "; ")
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || host.hasSuffix("." + domain)
    }

    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        if path == cookiePath { return true }
        guard path.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || path.dropFirst(cookiePath.count).first == "/"
    }

    static func parse(_ header: String, host: String, requestPath: String, now: Date) -> Cookie? {
        let parts = header.split(separator: ";", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let first = parts.first, let equals = first.firstIndex(of: "=") else { return nil }
        let name = String(first[..<equals]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(
            name: name, value: String(first[first.index(after: equals)...]), domain: host, hostOnly: true,
            path: defaultPath(requestPath), secure: false, expires: nil)
        var maxAge: Int?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1).map { String($0) }
            let key = pieces.first?.lowercased() ?? ""
            let value = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "domain":
                var domain = value.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // Refuse cookies for other sites and for bare top-level domains.
                guard domainMatches(host, domain), domain.contains(".") || domain == host else { return nil }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if value.hasPrefix("/") { cookie.path = value }
            case "secure":
                cookie.secure = true
            case "max-age":
                if let seconds = Int(value) { maxAge = seconds }
            case "expires":
                if cookie.expires == nil, let date = httpDate(value) { cookie.expires = date }
            default:
                continue
            }
        }
        if let maxAge { cookie.expires = now.addingTimeInterval(TimeInterval(maxAge)) }  // Max-Age wins
        return cookie
    }

    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<slash])
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in [
            "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE, dd-MMM-yyyy HH:mm:ss zzz",
        ] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
