import Foundation

/// An IPv4 or IPv6 address, parsed strictly.
///
/// Only the canonical spellings parse: IPv4 as four decimal octets without leading zeros (`127.0.0.1`, never
/// `0177.1`, `0x7f.1` or `2130706433`, which `inet_aton` would also read as loopback), IPv6 as RFC 4291 text with
/// at most one `::` and an optional dotted IPv4 tail, without a zone (`%eth0`). A host that is not one of these is
/// a name, and names are only ever judged by what they resolve to. Value type; thread-safe.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address, most significant octet first.
    case v4(UInt32)
    /// An IPv6 address as 16 bytes in network order.
    case v6([UInt8])

    /// Parses `text` (no brackets) as an address; nil when it is not a canonical IPv4 or IPv6 address.
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseV4(text) {
            self = .v4(v4)
        } else if let v6 = Self.parseV6(text) {
            self = .v6(v6)
        } else {
            return nil
        }
    }

    /// The 16 bytes of an IPv6 address, or 4 of an IPv4 one.
    public var bytes: [UInt8] {
        switch self {
        case .v4(let value):
            [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
        case .v6(let bytes): bytes
        }
    }

    /// The IPv4 address an IPv6 address carries where the network treats it as that IPv4 address: IPv4-mapped
    /// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`). Nil for
    /// IPv4 addresses and other IPv6 ones.
    public var embeddedIPv4: UInt32? {
        guard case .v6(let b) = self else { return nil }
        let word = { (i: Int) in UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return word(12) }
        if b[0..<12].allSatisfy({ $0 == 0 }) && word(12) > 1 { return word(12) }
        if b[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return word(12) }
        if b[0] == 0x20 && b[1] == 0x02 { return word(2) }
        return nil
    }

    /// Dotted quad, or RFC 5952 IPv6 text (lowercase hex, longest run of zero groups compressed).
    public var description: String {
        switch self {
        case .v4:
            return bytes.map(String.init).joined(separator: ".")
        case .v6(let b):
            let groups = (0..<8).map { UInt16(b[$0 * 2]) << 8 | UInt16(b[$0 * 2 + 1]) }
            var best = (start: -1, length: 0)
            var index = 0
            while index < 8 {
                guard groups[index] == 0 else {
                    index += 1
                    continue
                }
                let start = index
                while index < 8 && groups[index] == 0 { index += 1 }
                if index - start > best.length && index - start > 1 { best = (start, index - start) }
            }
            let hex = groups.map { String($0, radix: 16) }
            guard best.start >= 0 else { return hex.joined(separator: ":") }
            let head = hex[..<best.start].joined(separator: ":")
            let tail = hex[(best.start + best.length)...].joined(separator: ":")
            return head + "::" + tail
        }
    }

    /// `a.b.c.d`, each octet 0...255 in decimal without a leading zero.
    static func parseV4(_ text: some StringProtocol) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0 >= "0" && $0 <= "9" }),
                part.count == 1 || part.first != "0", let octet = UInt32(part), octet <= 255
            else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    /// RFC 4291 section 2.2 text: eight groups of 1–4 hex digits, one `::` for a run of zero groups, and the last
    /// 32 bits optionally as a dotted quad. No zone identifier.
    static func parseV6(_ text: some StringProtocol) -> [UInt8]? {
        guard text.contains(":"), text.count <= 45 else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if allowIPv4Tail && index == pieces.count - 1 && piece.contains(".") {
                    guard let v4 = parseV4(piece) else { return nil }
                    result += [UInt16(v4 >> 16), UInt16(v4 & 0xffff)]
                } else {
                    guard (1...4).contains(piece.count), piece.allSatisfy(\.isHexDigit),
                        let group = UInt16(piece, radix: 16)
                    else { return nil }
                    result.append(group)
                }
            }
            return result
        }
        let all: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0], allowIPv4Tail: false),
                let tail = groups(halves[1], allowIPv4Tail: true), head.count + tail.count <= 7
            else { return nil }
            all = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let only = groups(halves[0], allowIPv4Tail: true), only.count == 8 else { return nil }
            all = only
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }
}

/// A block of addresses in CIDR notation (`10.0.0.0/8`, `fe80::/10`, or one address with its full prefix).
public struct AddressRange: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the block.
    public var base: IPAddress {
        baseBytes.count == 4 ? .v4(baseBytes.reduce(0) { $0 << 8 | UInt32($1) }) : .v6(baseBytes)
    }
    /// The base's bytes, kept as a plain array rather than an `IPAddress`: the tables of ranges live for the whole
    /// process, and LeakSanitizer can't see a reference that a multi-payload enum stores with its tag in the
    /// pointer's spare bits (the fuzz run reported `AddressPolicy`'s table as leaked).
    private let baseBytes: [UInt8]
    /// The number of leading bits that every address of the block shares with ``base``.
    public let prefixLength: Int

    /// Parses `a.b.c.d/n`, `x:y::/n`, or a bare address (a block of one).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let width = address.bytes.count * 8
        if parts.count == 2 {
            guard parts[1].allSatisfy(\.isNumber), let length = Int(parts[1]), (0...width).contains(length) else {
                return nil
            }
            self.init(address, prefixLength: length)
        } else {
            self.init(address, prefixLength: width)
        }
    }

    /// The block of `base`'s first `prefixLength` bits (the remaining bits of `base` are ignored).
    public init(_ base: IPAddress, prefixLength: Int) {
        baseBytes = base.bytes
        self.prefixLength = max(0, min(prefixLength, baseBytes.count * 8))
    }

    /// True when `address` is of the same family and shares the block's prefix.
    public func contains(_ address: IPAddress) -> Bool {
        let a = baseBytes
        let b = address.bytes
        guard a.count == b.count else { return false }
        var remaining = prefixLength
        for index in 0..<a.count where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - bits))
            if a[index] & mask != b[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    /// `base/prefixLength`.
    public var description: String { "\(base)/\(prefixLength)" }
}
