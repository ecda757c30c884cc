/// Which resolved addresses the server may connect to: public unicast only, unless explicitly allowed.
///
/// Refused: every special-purpose block of the IANA registries that is not globally reachable — "this network",
/// private (RFC 1918, IPv6 unique-local), shared (CGNAT), loopback, link-local (the cloud metadata endpoint
/// `169.254.169.254` among them), documentation, benchmarking, IETF protocol assignments, multicast, reserved and
/// broadcast. An IPv6 address that carries an IPv4 address (mapped, compatible, NAT64, 6to4) is judged by that
/// IPv4 address too, so `::ffff:127.0.0.1` is loopback. ``allowed`` blocks win over the refusals: a deployment
/// whose origin lives on a private network, or a test whose origin is `127.0.0.1`, lists it there.
///
/// Value type; thread-safe.
public struct AddressPolicy: Sendable {
    /// Why an address is refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The refused address.
        public let address: IPAddress
        /// The special-purpose block it lies in, e.g. `loopback (127.0.0.0/8)`.
        public let block: String

        /// "`address` is `block`".
        public var description: String { "\(address) is \(block)" }
    }

    /// Blocks connected to even though they are not public (test origins, a private origin network).
    public let allowed: [AddressRange]

    /// Creates a policy that refuses every non-public address except those in `allowed`.
    public init(allowing allowed: [AddressRange] = []) {
        self.allowed = allowed
    }

    /// Nil when the server may connect to `address`, else why not.
    public func refusal(for address: IPAddress) -> Refusal? {
        if allowed.contains(where: { $0.contains(address) }) { return nil }
        if let block = Self.deniedBlock(for: address) { return Refusal(address: address, block: block) }
        if let v4 = address.embeddedIPv4 {
            let inner = IPAddress.v4(v4)
            if allowed.contains(where: { $0.contains(inner) }) { return nil }
            if let block = Self.deniedBlock(for: inner) {
                return Refusal(address: address, block: "\(block) inside an IPv6 address")
            }
        }
        return nil
    }

    private static func deniedBlock(for address: IPAddress) -> String? {
        denied.first { $0.range.contains(address) }.map { "\($0.name) (\($0.range))" }
    }

    /// The refused blocks (RFC 6890 and the IANA special-purpose registries), with a name for messages.
    static let denied: [(range: AddressRange, name: String)] = [
        ("0.0.0.0/8", "this network"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared address space"),
        ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"), ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"), ("192.168.0.0/16", "private"), ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"), ("203.0.113.0/24", "documentation"), ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"), ("255.255.255.255/32", "broadcast"),
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("100::/64", "discard-only"),
        ("2001::/23", "IETF protocol assignments"), ("2001:db8::/32", "documentation"), ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"), ("fec0::/10", "site-local"), ("ff00::/8", "multicast"),
    ].map { (AddressRange($0.0)!, $0.1) }
}
