import Foundation
import Synchronization

/// A bounded in-memory cookie jar for loads with ``/ImageCore/ImageOptions/handleCookies`` (without that option the
/// loader neither sends nor stores cookies).
///
/// Scope: what image CDNs use (session and signed-access cookies). It stores `Set-Cookie` answers (including
/// those on redirects) by domain, path and name; honours `Domain`, `Path`, `Max-Age`, `Expires`, `Secure`; and
/// sends matching, unexpired cookies as one `Cookie` header (RFC 6265). Hostile servers are bounded: a cookie whose
/// `Domain` is a public suffix (``PublicSuffixList``) or an IP address other than the host is refused; at most
/// ``maximumCookiesPerDomain`` cookies per registrable domain and ``maximumCookies`` in all are kept, the least
/// recently used (set or sent) evicted first; names and values over 4 KiB or with control characters are refused.
/// Not implemented: `SameSite` (no browsing context on a server), persistence. Thread-safe (a `Mutex`).
///
/// Partitions: every cookie belongs to the partition it was set in — the load's
/// ``/ImageCore/ImageContext/cachePartitionKey``, nil for unpartitioned loads — and is sent only to loads of the
/// same partition, so one tenant's cookies never go out on another tenant's load. The bounds hold for the whole
/// jar; the per-domain bound counts each partition on its own.
public final class HTTPCookieJar: Sendable {
    struct Cookie: Sendable, Equatable {
        var name: String
        var value: String
        /// The ``ImageContext/cachePartitionKey`` of the load that received it; nil for unpartitioned loads.
        var partition: String? = nil
        var domain: String
        /// True when the cookie came without `Domain` and matches only its origin host.
        var hostOnly: Bool
        var path: String
        var secure: Bool
        var expires: Date?
        /// The registrable domain the per-domain bound counts it under.
        var site: String = ""
        /// Last set or sent (a jar-wide counter), for LRU eviction.
        var lastUse: UInt64 = 0
    }

    private struct State {
        var cookies: [Cookie] = []
        var clock: UInt64 = 0
    }

    /// The most cookies kept for one registrable domain (default 50).
    public let maximumCookiesPerDomain: Int
    /// The most cookies kept in all (default 1,000).
    public let maximumCookies: Int
    private let suffixes: PublicSuffixList?
    private let state = Mutex(State())

    /// Creates an empty jar.
    ///
    /// - Parameters:
    ///   - maximumCookiesPerDomain: Bound per registrable domain (`example.co.uk`), at least 1.
    ///   - maximumCookies: Bound for the whole jar, at least 1.
    ///   - publicSuffixes: The public-suffix list; nil uses ``PublicSuffixList/system``, loaded on first use.
    public init(maximumCookiesPerDomain: Int = 50, maximumCookies: Int = 1000, publicSuffixes: PublicSuffixList? = nil)
    {
        self.maximumCookiesPerDomain = max(1, maximumCookiesPerDomain)
        self.maximumCookies = max(1, maximumCookies)
        self.suffixes = publicSuffixes
    }

    private var publicSuffixes: PublicSuffixList { suffixes ?? .system }

    /// Number of stored cookies (expired ones included until the next lookup).
    public var count: Int { state.withLock { $0.cookies.count } }

    /// True when no cookie is stored (cheap: the loader asks it for every load with
    /// ``/ImageCore/ImageOptions/handleCookies``).
    public var isEmpty: Bool { state.withLock { $0.cookies.isEmpty } }

    /// Removes every cookie.
    public func removeAll() { state.withLock { $0.cookies.removeAll() } }

    /// Removes every cookie of `partition` (nil: the unpartitioned ones).
    public func removeAll(inPartition partition: String?) {
        state.withLock { $0.cookies.removeAll { $0.partition == partition } }
    }

    /// Stores the cookies of `setCookieHeaders` received from `url` by a load of `partition`.
    public func store(setCookieHeaders: [String], from url: URL, partition: String? = nil, now: Date = Date()) {
        guard !setCookieHeaders.isEmpty, let host = url.host?.lowercased(), !host.isEmpty else { return }
        let parsed = setCookieHeaders.compactMap { parse($0, host: host, requestPath: url.path, now: now) }
        guard !parsed.isEmpty else { return }
        state.withLock { state in
            for var cookie in parsed {
                cookie.partition = partition
                state.cookies.removeAll {
                    $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path
                        && $0.partition == partition
                }
                if let expires = cookie.expires, expires <= now { continue }  // an expired cookie deletes
                state.clock += 1
                cookie.lastUse = state.clock
                state.cookies.append(cookie)
                evict(&state, site: cookie.site, partition: partition, now: now)
            }
        }
    }

    /// Drops expired cookies, then the least recently used of `site` in `partition` over its bound, then of the
    /// jar over its own.
    private func evict(_ state: inout State, site: String, partition: String?, now: Date) {
        let inSite = { (cookie: Cookie) in cookie.site == site && cookie.partition == partition }
        if state.cookies.lazy.filter(inSite).count > maximumCookiesPerDomain || state.cookies.count > maximumCookies {
            state.cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
        }
        var excess = state.cookies.lazy.filter(inSite).count - maximumCookiesPerDomain
        while excess > 0, let index = Self.leastRecentlyUsed(state.cookies, where: inSite) {
            state.cookies.remove(at: index)
            excess -= 1
        }
        while state.cookies.count > maximumCookies,
            let index = Self.leastRecentlyUsed(state.cookies, where: { _ in true })
        {
            state.cookies.remove(at: index)
        }
    }

    private static func leastRecentlyUsed(_ cookies: [Cookie], where matches: (Cookie) -> Bool) -> Int? {
        var best: Int?
        for index in cookies.indices where matches(cookies[index]) {
            if best == nil || cookies[index].lastUse < cookies[best!].lastUse { best = index }
        }
        return best
    }

    /// True when a cookie would be sent to `url` by a load of `partition` (the loader's credential check).
    public func hasCookies(for url: URL, partition: String? = nil, now: Date = Date()) -> Bool {
        if isEmpty { return false }
        return matching(url, partition: partition, now: now, touch: false) != nil
    }

    /// The `Cookie` header value for a request to `url` by a load of `partition`, or nil when no cookie matches.
    public func cookieHeader(for url: URL, partition: String? = nil, now: Date = Date()) -> String? {
        if isEmpty { return nil }
        return matching(url, partition: partition, now: now, touch: true)
    }

    private func matching(_ url: URL, partition: String?, now: Date, touch: Bool) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let matching = state.withLock { state -> [Cookie] in
            state.cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
            var found: [Cookie] = []
            for index in state.cookies.indices {
                let cookie = state.cookies[index]
                guard cookie.partition == partition,
                    cookie.hostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain),
                    Self.pathMatches(path, cookie.path), secure || !cookie.secure
                else { continue }
                found.append(cookie)
                if touch {
                    state.clock += 1
                    state.cookies[index].lastUse = state.clock
                }
            }
            return found
        }
        guard !matching.isEmpty else { return nil }
        // RFC 6265 §5.4: longer paths first.
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }
            .joined(separator: "; ")
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (!isIPAddress(host) && host.hasSuffix("." + domain))
    }

    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E })
    }

    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        if path == cookiePath { return true }
        guard path.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || path.dropFirst(cookiePath.count).first == "/"
    }

    /// Parses one `Set-Cookie` value from `host`; nil when it must be ignored.
    func parse(_ header: String, host: String, requestPath: String, now: Date) -> Cookie? {
        guard header.utf8.count <= 8192 else { return nil }
        let parts = header.split(separator: ";", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let first = parts.first, let equals = first.firstIndex(of: "=") else { return nil }
        let name = String(first[..<equals]).trimmingCharacters(in: .whitespaces)
        let value = String(first[first.index(after: equals)...])
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= 4096,
            !(name.utf8.contains(where: Self.isControl) || value.utf8.contains(where: Self.isControl))
        else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, hostOnly: true, path: Self.defaultPath(requestPath),
            secure: false, expires: nil)
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
                guard Self.domainMatches(host, domain) else { return nil }  // another site's domain
                cookie.domain = domain
                // RFC 6265 §5.3 step 5: a public suffix is refused, unless it is the host itself (host-only then).
                if publicSuffixes.isPublicSuffix(domain) {
                    guard domain == host else { return nil }
                    cookie.hostOnly = true
                } else {
                    cookie.hostOnly = false
                }
            case "path":
                if value.hasPrefix("/") { cookie.path = value }
            case "secure":
                cookie.secure = true
            case "max-age":
                if let seconds = Int(value) { maxAge = seconds }
            case "expires":
                if cookie.expires == nil, let date = HTTPDate.parse(value) { cookie.expires = date }
            default:
                continue
            }
        }
        if let maxAge {  // Max-Age wins over Expires
            let clamped = min(max(maxAge, -1), 400 * 86_400)
            cookie.expires = now.addingTimeInterval(TimeInterval(clamped))
        }
        cookie.site = Self.isIPAddress(host) ? host : publicSuffixes.registrableDomain(of: cookie.domain)
        return cookie
    }

    /// Control characters (RFC 6265 `cookie-octet` excludes them): a cookie holding one is never stored or sent.
    static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }

    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<slash])
    }
}
