/// Redis Cluster's key → hash slot function: CRC16 (XMODEM) of the key, or of its `{hash tag}`, modulo 16384.
enum HashSlot {
    static let count = 16384

    /// The slot of `key`. When the key has a `{…}` with at least one byte inside, only those bytes count, so
    /// `a{x}` and `b{x}` share a slot (the cache puts an entry and its lease in one slot this way).
    static func slot(forKey key: some Collection<UInt8>) -> Int {
        let bytes = Array(key)
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
            let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            return Int(crc16(bytes[(open + 1)..<close]) % UInt16(count))
        }
        return Int(crc16(bytes[...]) % UInt16(count))
    }

    static func slot(forKey key: String) -> Int { slot(forKey: Array(key.utf8)) }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as in Redis's `crc16.c`.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}

/// Which primary serves each of the 16384 slots, read from `CLUSTER SHARDS` (Redis 7) or `CLUSTER SLOTS`.
///
/// Pure and immutable apart from ``moved(slot:to:)``, which records one `MOVED` answer until the next full read.
struct ClusterSlotMap: Sendable, Equatable {
    /// The primaries, in the order first seen.
    private(set) var primaries: [RedisEndpoint]
    /// Index into `primaries` per slot; -1 for a slot no node serves.
    private var owners: [Int16]

    init() {
        primaries = []
        owners = Array(repeating: -1, count: HashSlot.count)
    }

    /// The primary serving `slot`, nil when none does.
    func endpoint(forSlot slot: Int) -> RedisEndpoint? {
        guard slot >= 0, slot < owners.count else { return nil }
        let owner = Int(owners[slot])
        return owner >= 0 ? primaries[owner] : nil
    }

    /// Slots without an owner.
    var unassignedCount: Int { owners.lazy.filter { $0 < 0 }.count }

    /// A `MOVED slot endpoint` answer: `slot` now lives at `endpoint`.
    mutating func moved(slot: Int, to endpoint: RedisEndpoint) {
        guard slot >= 0, slot < owners.count else { return }
        owners[slot] = Int16(index(of: endpoint))
    }

    private mutating func index(of endpoint: RedisEndpoint) -> Int {
        if let index = primaries.firstIndex(of: endpoint) { return index }
        primaries.append(endpoint)
        return primaries.count - 1
    }

    private mutating func assign(_ range: ClosedRange<Int>, to endpoint: RedisEndpoint) {
        let owner = Int16(index(of: endpoint))
        for slot in range where slot >= 0 && slot < owners.count { owners[slot] = owner }
    }

    // MARK: Parsing

    /// Reads a `CLUSTER SHARDS` reply (RESP2 flat arrays or RESP3 maps). `fallbackHost` replaces a node that
    /// announces no usable address (`?` or empty), as Redis does for the node you asked; `tls` picks `tls-port`.
    ///
    /// - Throws: `RedisClientError(.cluster)` for a reply of another shape.
    static func fromShards(_ reply: RESPValue, fallbackHost: String, tls: Bool) throws(RedisClientError) -> Self {
        guard let shards = reply.elements else { throw RedisClientError(.cluster, "CLUSTER SHARDS: not an array") }
        var map = ClusterSlotMap()
        for shard in shards {
            let fields = try Self.fields(shard)
            guard let slots = fields["slots"]?.elements, let nodes = fields["nodes"]?.elements else {
                throw RedisClientError(.cluster, "CLUSTER SHARDS: a shard without slots or nodes")
            }
            var primary: RedisEndpoint?
            for node in nodes {
                let info = try Self.fields(node)
                guard info["role"]?.string == "master", info["health"]?.string ?? "online" == "online" else {
                    continue
                }
                let port = (tls ? info["tls-port"]?.int : nil) ?? info["port"]?.int ?? info["tls-port"]?.int
                var host = info["endpoint"]?.string ?? info["ip"]?.string ?? ""
                if host.isEmpty || host == "?" { host = info["ip"]?.string ?? "" }
                if host.isEmpty || host == "?" { host = fallbackHost }
                guard let port, (1...65535).contains(port) else { continue }
                primary = .tcp(host: host, port: Int(port))
            }
            guard let primary else { continue }
            var index = 0
            while index + 1 < slots.count {
                guard let start = slots[index].int, let end = slots[index + 1].int, start <= end else {
                    throw RedisClientError(.cluster, "CLUSTER SHARDS: bad slot range")
                }
                map.assign(Int(start)...Int(end), to: primary)
                index += 2
            }
        }
        return map
    }

    /// Reads a `CLUSTER SLOTS` reply: `[start, end, [host, port, id…] primary, replicas…]` per range.
    static func fromSlots(_ reply: RESPValue, fallbackHost: String) throws(RedisClientError) -> Self {
        guard let ranges = reply.elements else { throw RedisClientError(.cluster, "CLUSTER SLOTS: not an array") }
        var map = ClusterSlotMap()
        for range in ranges {
            guard let items = range.elements, items.count >= 3, let start = items[0].int, let end = items[1].int,
                start <= end, let node = items[2].elements, node.count >= 2, let port = node[1].int,
                (1...65535).contains(port)
            else { throw RedisClientError(.cluster, "CLUSTER SLOTS: bad range") }
            var host = node[0].string ?? ""
            if host.isEmpty || host == "?" { host = fallbackHost }
            map.assign(Int(start)...Int(end), to: .tcp(host: host, port: Int(port)))
        }
        return map
    }

    /// A RESP3 map or a RESP2 flat `[name, value, …]` array as a dictionary keyed by name.
    private static func fields(_ value: RESPValue) throws(RedisClientError) -> [String: RESPValue] {
        let flat: [RESPValue]
        switch value {
        case .map(let pairs): flat = pairs.flatMap { [$0.key, $0.value] }
        case .array(let items): flat = items
        default: throw RedisClientError(.cluster, "expected a map")
        }
        var fields: [String: RESPValue] = [:]
        var index = 0
        while index + 1 < flat.count {
            if let name = flat[index].string { fields[name] = flat[index + 1] }
            index += 2
        }
        return fields
    }
}

/// A `MOVED` or `ASK` error reply.
struct ClusterRedirect: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        case moved
        case ask
    }

    let kind: Kind
    let slot: Int
    let endpoint: RedisEndpoint

    /// Parses `MOVED 3999 127.0.0.1:6381` / `ASK 3999 127.0.0.1:6381` (an empty host means the node asked).
    init?(_ message: String, currentHost: String) {
        let parts = message.split(separator: " ")
        guard parts.count == 3, let slot = Int(parts[1]), (0..<HashSlot.count).contains(slot) else { return nil }
        switch parts[0] {
        case "MOVED": kind = .moved
        case "ASK": kind = .ask
        default: return nil
        }
        guard let colon = parts[2].lastIndex(of: ":"), let port = Int(parts[2][parts[2].index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(parts[2][..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = currentHost }
        self.slot = slot
        self.endpoint = .tcp(host: host, port: port)
    }
}
