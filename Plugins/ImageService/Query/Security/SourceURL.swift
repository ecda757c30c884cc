import Foundation

/// A source image URL, parsed by one strict grammar so that what the policy checks is what the server fetches.
///
/// URL parsers disagree on the edges (a `\` is a `/` to a browser and a path character to RFC 3986, `0x7f.1` is
/// loopback to `inet_aton` and a name to others, `a.com@b.com` names the host `b.com`), and every disagreement is
/// a way past an allowlist. So the grammar here refuses every edge instead of interpreting it:
/// - `http` or `https`, then `://`; no user info (`@` anywhere in the authority); no `\`, whitespace or control
///   characters anywhere.
/// - The host is an IPv6 literal in brackets (no zone), a canonical dotted-quad IPv4 address, or a DNS name of
///   ASCII letters, digits, `-` and `_` in labels of 1–63 characters (at most 253 in all). One trailing dot is
///   dropped (`a.com.` is `a.com`), letters are lowercased. Percent-encoded hosts, internationalised names not in
///   their `xn--` punycode form, and names whose last label is numeric (`127.1`, `0x7f.0.0.1`, `2130706433`:
///   the legacy IPv4 spellings) are refused.
/// - An explicit port is 1–65535 in decimal.
/// - The fragment is dropped (it is never sent); path and query are kept as given.
///
/// ``canonical`` rebuilds the URL from these parts; the server fetches that string, and checks that Foundation's
/// parser reads the same host and port from it. Value type; thread-safe.
public struct SourceURL: Hashable, Sendable, CustomStringConvertible {
    /// Why a URL was refused; `message` says which rule.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        /// The rule the URL broke.
        public let message: String
        /// `message`.
        public var description: String { message }
    }

    /// `http` or `https`.
    public let scheme: String
    /// The host as compared and resolved: lowercase, no trailing dot; an IPv6 literal without brackets.
    public let host: String
    /// The port connected to (the scheme's default when none was given).
    public let port: Int
    /// True when the URL named its port.
    public let hasExplicitPort: Bool
    /// The host as an address when it is an IP literal.
    public let literalAddress: IPAddress?
    /// Path and query as given, starting with `/` (an empty path becomes `/`).
    public let pathAndQuery: String

    /// The longest source URL accepted.
    public static let maximumLength = 8192

    /// Parses `text`; throws ``Invalid`` naming the broken rule.
    public init(_ text: String) throws(Invalid) {
        guard text.utf8.count <= Self.maximumLength else { throw Invalid(message: "the URL is too long") }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f || $0 == "\\" }) else {
            throw Invalid(message: "the URL contains whitespace, a control character or a backslash")
        }
        guard let separator = text.range(of: "://") else { throw Invalid(message: "the URL is not absolute") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw Invalid(message: "the scheme must be http or https") }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var tail = rest[authorityEnd...]
        if let hash = tail.firstIndex(of: "#") { tail = tail[..<hash] }
        guard !authority.contains("@") else { throw Invalid(message: "user info (@) in a source URL is refused") }

        let hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw Invalid(message: "unterminated IPv6 literal") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid(message: "garbage after the IPv6 literal") }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
        }

        let defaultPort = scheme == "https" ? 443 : 80
        var port = defaultPort
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0 >= "0" && $0 <= "9" }),
                let number = Int(portPart), (1...65535).contains(number)
            else { throw Invalid(message: "the port must be a number from 1 to 65535") }
            port = number
        }

        let host: String
        let address: IPAddress?
        if authority.hasPrefix("[") {
            guard let v6 = IPAddress.parseV6(hostPart) else { throw Invalid(message: "not an IPv6 address") }
            address = .v6(v6)
            host = address!.description
        } else {
            (host, address) = try Self.parseHost(hostPart)
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        self.hasExplicitPort = portPart != nil && port != defaultPort
        self.literalAddress = address
        self.pathAndQuery = tail.isEmpty || tail.hasPrefix("?") ? "/" + tail : String(tail)
    }

    /// A name or a dotted quad; see the type's rules.
    static func parseHost(_ raw: Substring) throws(Invalid) -> (String, IPAddress?) {
        guard raw.unicodeScalars.allSatisfy(\.isASCII) else {
            throw Invalid(message: "internationalised host names must be given in punycode (xn--)")
        }
        guard !raw.contains("%") else { throw Invalid(message: "percent-encoded host names are refused") }
        var name = raw.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else {
            throw Invalid(message: "the host name is empty or too long")
        }
        if let v4 = IPAddress.parseV4(name) { return (name, .v4(v4)) }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.count),
                label.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_" }),
                !label.hasPrefix("-"), !label.hasSuffix("-")
            else { throw Invalid(message: "the host name \(name.prefix(80)) is not a valid DNS name") }
        }
        // WHATWG parsers read a host whose last label is numeric as an IPv4 address in a legacy spelling.
        if let last = labels.last,
            last.allSatisfy({ $0 >= "0" && $0 <= "9" })
                || (last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit))
        {
            throw Invalid(message: "the host \(name.prefix(80)) is a non-canonical IPv4 address")
        }
        return (name, nil)
    }

    /// The host as it appears in a URL (IPv6 in brackets).
    public var hostForURL: String {
        if case .v6 = literalAddress { return "[\(host)]" }
        return host
    }

    /// The URL rebuilt from its checked parts (default port left out, no fragment).
    public var canonical: String {
        "\(scheme)://\(hostForURL)\(hasExplicitPort ? ":\(port)" : "")\(pathAndQuery)"
    }

    /// ``canonical`` as a Foundation URL, when Foundation reads the same host and port from it.
    ///
    /// - Throws: ``Invalid`` when Foundation disagrees (the server then refuses the URL rather than guess which
    ///   reading the HTTP client would follow).
    public func foundationURL() throws(Invalid) -> URL {
        guard let url = URL(string: canonical), url.scheme?.lowercased() == scheme,
            let parsedHost = url.host?.lowercased(),
            parsedHost == host || parsedHost == "[\(host)]",
            (url.port ?? (scheme == "https" ? 443 : 80)) == port
        else { throw Invalid(message: "the URL is read differently by Foundation's parser") }
        return url
    }

    /// ``canonical``.
    public var description: String { canonical }
}
