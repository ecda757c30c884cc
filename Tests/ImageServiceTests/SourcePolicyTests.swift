import Foundation
import Testing

@testable import ImageServiceQuery

/// The source policy's pure parts: the URL grammar, the host allowlist, the address policy.
@Suite struct SourcePolicyTests {
    /// URLs that must not parse, each with the rule it breaks.
    @Test(arguments: [
        ("http://allowed.com@evil.com/a.jpg", "user info"),
        ("http://allowed.com:80@evil.com/a.jpg", "user info"),
        ("http://user:pass@allowed.com/a.jpg", "user info"),
        ("http://allowed.com\\@evil.com/a.jpg", "backslash"),
        ("http://allowed%2ecom/a.jpg", "percent-encoded"),
        ("http://%61llowed.com/a.jpg", "percent-encoded"),
        ("http://ａllowed.com/a.jpg", "punycode"),
        ("http://bücher.example/a.jpg", "punycode"),
        ("http://127.1/a.jpg", "non-canonical IPv4"),
        ("http://0x7f.0.0.1/a.jpg", "non-canonical IPv4"),
        ("http://2130706433/a.jpg", "non-canonical IPv4"),
        ("http://0177.0.0.1/a.jpg", "non-canonical IPv4"),
        ("http://[::1%25eth0]/a.jpg", "IPv6"),
        ("http://allowed.com:0/a.jpg", "port"),
        ("http://allowed.com:65536/a.jpg", "port"),
        ("http://allowed.com:/a.jpg", "port"),
        ("http://allowed.com:8o/a.jpg", "port"),
        ("http://allowed..com/a.jpg", "DNS name"),
        ("http://-allowed.com/a.jpg", "DNS name"),
        ("http:///a.jpg", "empty"),
        ("ftp://allowed.com/a.jpg", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("//allowed.com/a.jpg", "not absolute"),
        ("http://allowed.com/a b.jpg", "whitespace"),
        ("http://allowed.com\t/a.jpg", "whitespace"),
    ])
    func refusedURLs(url: String, rule: String) {
        #expect {
            _ = try SourceURL(url)
        } throws: { error in
            (error as? SourceURL.Invalid)?.message.contains(rule) == true
        }
    }

    @Test func canonicalForms() throws {
        let trailingDot = try SourceURL("HTTP://Allowed.COM./a.jpg?x=1#frag")
        #expect(trailingDot.host == "allowed.com" && trailingDot.port == 80)
        #expect(trailingDot.canonical == "http://allowed.com/a.jpg?x=1")
        let port = try SourceURL("https://cdn.example.com:8443")
        #expect(port.port == 8443 && port.pathAndQuery == "/" && port.canonical == "https://cdn.example.com:8443/")
        let defaultPort = try SourceURL("https://cdn.example.com:443/x")
        #expect(defaultPort.canonical == "https://cdn.example.com/x")
        let v6 = try SourceURL("http://[0:0:0:0:0:ffff:7f00:1]:8080/a")
        #expect(
            v6.host == "::ffff:7f00:1" && v6.literalAddress != nil && v6.canonical == "http://[::ffff:7f00:1]:8080/a")
        let fragmentHost = try SourceURL("http://evil.com#@allowed.com/a.jpg")
        #expect(fragmentHost.host == "evil.com")
        let queryHost = try SourceURL("http://evil.com?@allowed.com/")
        #expect(queryHost.host == "evil.com")
        // Foundation reads the canonical form the same way.
        for url in [trailingDot, port, v6, fragmentHost] {
            #expect(try url.foundationURL().port ?? url.port == url.port)
        }
    }

    @Test func allowlist() throws {
        let list = try HostAllowlist([
            "allowed.com", "*.cdn.example", "https://img.example:8443", "xn--bcher-kva.example",
        ])
        func allows(_ text: String) throws -> Bool { list.allows(try SourceURL(text)) }
        #expect(try allows("http://allowed.com/a"))
        #expect(try allows("https://ALLOWED.com./a"))
        #expect(try allows("http://allowed.com:8080/a"))
        #expect(try !allows("http://allowed.com.evil.com/a"))
        #expect(try !allows("http://evilallowed.com/a"))
        #expect(try !allows("http://evil.com#@allowed.com/a"))
        #expect(try allows("http://a.cdn.example/x") && allows("http://a.b.cdn.example/x"))
        #expect(try !allows("http://cdn.example/x"))
        #expect(try !allows("http://xcdn.example/x"))
        #expect(try allows("https://img.example:8443/x"))
        #expect(try !allows("http://img.example:8443/x"))
        #expect(try !allows("https://img.example/x"))
        #expect(try allows("http://xn--bcher-kva.example/a"))
        #expect(throws: HostAllowlist.InvalidEntry.self) { try HostAllowlist(["bücher.example"]) }
        #expect(throws: HostAllowlist.InvalidEntry.self) { try HostAllowlist(["ftp://a.com"]) }
        #expect(try HostAllowlist([]).allowsEveryHost)
    }

    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.4", "::1", "::", "fe80::1", "fc00::1",
        "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "ff02::1",
        "::127.0.0.1",
    ])
    func refusedAddresses(text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressPolicy().refusal(for: address) != nil, "\(text)")
    }

    @Test(arguments: ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "1.1.1.1"])
    func publicAddresses(text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressPolicy().refusal(for: address) == nil, "\(text)")
    }

    @Test func allowedBlocksWinOverTheRefusals() throws {
        let policy = AddressPolicy(allowing: [
            try #require(AddressRange("127.0.0.1/32")), try #require(AddressRange("10.1.0.0/16")),
        ])
        #expect(policy.refusal(for: try #require(IPAddress("127.0.0.1"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("::ffff:127.0.0.1"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("127.0.0.2"))) != nil)
        #expect(policy.refusal(for: try #require(IPAddress("10.1.200.3"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("10.2.0.1"))) != nil)
    }

    @Test func strictAddressParsing() {
        for text in [
            "127.1", "0177.0.0.1", "1.2.3.4.5", "256.0.0.1", "1.2.3", "::1::", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0",
            "::ffff:1.2.3",
        ] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
        #expect(IPAddress("1:2:3:4:5:6:1.2.3.4") != nil)
    }

    /// Property: every IPv6 address prints (RFC 5952) to text that parses back to it; random addresses, seed
    /// printed.
    @Test func ipv6TextRoundTrips() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ipv6TextRoundTrips seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<2000 {
            // Runs of zero groups are common in real addresses: draw each group as zero half the time.
            let bytes = (0..<8).flatMap { _ -> [UInt8] in
                Bool.random(using: &generator)
                    ? [0, 0]
                    : [UInt8.random(in: 0...255, using: &generator), UInt8.random(in: 0...255, using: &generator)]
            }
            let address = IPAddress.v6(bytes)
            #expect(IPAddress(address.description) == address, "seed \(seed): \(address)")
        }
    }
}

/// SplitMix64: a small seeded generator, so a failing property run can be replayed from its printed seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
