import Foundation

/// Which hosts sources may come from, matched against a parsed ``SourceURL``.
///
/// Entries: `images.example.com` (that host, any scheme and port), `*.example.com` (any host under it, whole
/// labels only, not `example.com` itself), and either of those as an origin, `https://cdn.example.com:8443` or
/// `https://*.example.com` (scheme and port must match too; the scheme's default port when none is given). Hosts
/// compare as the source parser canonicalises them: lowercase, no trailing dot, punycode for internationalised
/// names. An empty list allows every host — the address policy still judges where each one resolves.
///
/// Value type; thread-safe.
public struct HostAllowlist: Sendable, Equatable {
    /// One entry.
    struct Entry: Sendable, Equatable {
        /// `http` / `https`, or nil for any.
        let scheme: String?
        /// The host, or the parent domain of a wildcard.
        let host: String
        /// Whether the entry is `*.host`.
        let wildcard: Bool
        /// The port, or nil for any.
        let port: Int?

        func matches(_ url: SourceURL) -> Bool {
            if let scheme, scheme != url.scheme { return false }
            if let port, port != url.port { return false }
            return wildcard ? url.host.hasSuffix("." + host) : url.host == host
        }
    }

    /// An entry that could not be read; `message` says why.
    public struct InvalidEntry: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        public let message: String
        /// `message`.
        public var description: String { message }
    }

    let entries: [Entry]

    /// True when every host is allowed.
    public var allowsEveryHost: Bool { entries.isEmpty }

    /// Reads `entries`; blank ones are skipped.
    ///
    /// - Throws: ``InvalidEntry`` for an entry that is not a host, a wildcard or an origin of them (an
    ///   internationalised name must be written in punycode).
    public init(_ entries: [String]) throws(InvalidEntry) {
        var parsed: [Entry] = []
        for raw in entries {
            let text = raw.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            parsed.append(try Self.entry(text))
        }
        self.entries = parsed
    }

    /// True when `url`'s scheme, host and port match an entry, or the list is empty.
    public func allows(_ url: SourceURL) -> Bool {
        entries.isEmpty || entries.contains { $0.matches(url) }
    }

    private static func entry(_ text: String) throws(InvalidEntry) -> Entry {
        var scheme: String?
        var hostText = Substring(text)
        var port: Int?
        if let separator = text.range(of: "://") {
            scheme = text[..<separator.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw InvalidEntry(message: "\(text): the scheme must be http or https")
            }
            var authority = text[separator.upperBound...]
            if authority.hasSuffix("/") { authority.removeLast() }
            // The source parser reads the origin's port; a wildcard is turned into a label it accepts.
            let probe = "\(scheme!)://" + authority.replacingOccurrences(of: "*.", with: "wildcard-label.")
            guard let url = try? SourceURL(probe), url.pathAndQuery == "/" else {
                throw InvalidEntry(message: "\(text): not an origin (scheme://host[:port])")
            }
            port = url.port
            hostText = authority.hasPrefix("[") ? authority : Substring(authority.split(separator: ":").first ?? "")
        }
        let wildcard = hostText.hasPrefix("*.")
        if wildcard { hostText = hostText.dropFirst(2) }
        let host: String
        if hostText.hasPrefix("[") {
            guard let close = hostText.firstIndex(of: "]"),
                let v6 = IPAddress.parseV6(hostText.dropFirst().prefix(upTo: close))
            else { throw InvalidEntry(message: "\(text): not an IPv6 literal") }
            host = IPAddress.v6(v6).description
        } else {
            do throws(SourceURL.Invalid) {
                host = try SourceURL.parseHost(hostText).0
            } catch {
                throw InvalidEntry(message: "\(text): \(error.message)")
            }
        }
        return Entry(scheme: scheme, host: host, wildcard: wildcard, port: port)
    }
}
