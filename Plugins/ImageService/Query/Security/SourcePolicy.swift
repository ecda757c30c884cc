/// The source policy as one value: which hosts sources may come from (``HostAllowlist``) and which addresses the
/// service may connect to (``AddressPolicy``).
///
/// It is judged twice: on every hop of a fetch (before the connection, by the fetcher), and on every answer made
/// from a cache, against the ``SourceProvenance`` stored with the cached bytes — the hops the bytes came through
/// and the addresses they were fetched from — so a host or an address block removed from the policy stops being
/// served at once, cached or not, without a DNS lookup on the hit path. Value type; thread-safe.
public struct SourcePolicy: Sendable {
    /// The hosts allowed.
    public let allowlist: HostAllowlist
    /// The addresses allowed.
    public let addresses: AddressPolicy

    /// Creates a policy.
    public init(allowlist: HostAllowlist, addresses: AddressPolicy) {
        self.allowlist = allowlist
        self.addresses = addresses
    }

    /// Nil when `url`'s host may be asked for, else why not (the first check of a request, before any cache).
    public func refusal(for url: SourceURL) -> String? {
        allowlist.allows(url) ? nil : "\(url.scheme)://\(url.hostForURL):\(url.port) is not on the source allowlist"
    }

    /// Nil when bytes that came through `provenance` may still be served, else why not.
    public func refusal(for provenance: SourceProvenance) -> String? {
        guard !provenance.hops.isEmpty else { return "the cached entry does not say where it came from" }
        for hop in provenance.hops {
            guard let address = IPAddress(hop.address) else { return "the cached entry names no address" }
            let host = hop.host
            if !allowlist.allowsEveryHost {
                guard
                    let url = try? SourceURL("\(hop.scheme)://\(host.contains(":") ? "[\(host)]" : host):\(hop.port)/"),
                    allowlist.allows(url)
                else { return "\(hop.scheme)://\(host):\(hop.port) is no longer on the source allowlist" }
            }
            if let refusal = addresses.refusal(for: address) { return "\(host) was fetched from \(refusal)" }
        }
        return nil
    }
}

/// Where cached bytes came from: every hop of the fetch (redirects included), with the address connected to.
///
/// Stored with each cached source and result, so the policy can be judged again on a hit. Value type.
public struct SourceProvenance: Sendable, Equatable, Codable {
    /// One hop of a fetch.
    public struct Hop: Sendable, Equatable, Codable {
        /// `http` or `https`.
        public var scheme: String
        /// The host as the source URL names it (an IPv6 literal without brackets).
        public var host: String
        /// The port connected to.
        public var port: Int
        /// The address connected to, as text.
        public var address: String

        /// Creates a hop.
        public init(scheme: String, host: String, port: Int, address: String) {
            self.scheme = scheme
            self.host = host
            self.port = port
            self.address = address
        }
    }

    /// The hops, first to last.
    public var hops: [Hop]

    /// Creates a provenance.
    public init(hops: [Hop]) { self.hops = hops }
}
