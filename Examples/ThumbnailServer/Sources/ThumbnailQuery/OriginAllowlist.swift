import Foundation

/// Decides which source URLs the server may fetch: http(s) only, and only from listed origins.
///
/// An entry without `://` is a host and matches any scheme and port; an entry with it is an origin and must
/// match scheme, host and port exactly (default ports filled in). Hosts compare case-insensitively.
public struct OriginAllowlist: Sendable {
    private struct Origin: Hashable {
        let scheme: String
        let host: String
        let port: Int
    }

    private let hosts: Set<String>
    private let origins: Set<Origin>

    /// Creates an allowlist from host names (`images.example.com`) and origins (`https://cdn.example.com:8443`);
    /// entries that are neither are ignored.
    public init(_ entries: [String]) {
        var hosts: Set<String> = []
        var origins: Set<Origin> = []
        for entry in entries where !entry.isEmpty {
            if entry.contains("://") {
                if let url = URL(string: entry), let origin = Self.origin(of: url) { origins.insert(origin) }
            } else {
                hosts.insert(entry.lowercased())
            }
        }
        self.hosts = hosts
        self.origins = origins
    }

    /// True when `url` is http(s) and its host, or its scheme, host and port, are listed.
    public func allows(_ url: URL) -> Bool {
        guard let origin = Self.origin(of: url) else { return false }
        return hosts.contains(origin.host) || origins.contains(origin)
    }

    private static func origin(of url: URL) -> Origin? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        return Origin(scheme: scheme, host: host, port: url.port ?? (scheme == "https" ? 443 : 80))
    }
}
