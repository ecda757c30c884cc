import NIOCore
import Testing

@testable import RedisCache

/// Hash slots, slot-map parsing and redirections, without a cluster.
@Suite struct ClusterSlotMapTests {
    func bulk(_ text: String) -> RESPValue { .bulkString(ByteBuffer(string: text)) }

    @Test func crc16AndSlotsMatchRedis() {
        // The check value of CRC16/XMODEM, and slots given in the Redis Cluster specification and by
        // `CLUSTER KEYSLOT`.
        #expect(HashSlot.crc16(Array("123456789".utf8)[...]) == 0x31C3)
        #expect(HashSlot.slot(forKey: "foo") == 12182)
        #expect(HashSlot.slot(forKey: "bar") == 5061)
        #expect(HashSlot.slot(forKey: "{user1000}.following") == HashSlot.slot(forKey: "{user1000}.followers"))
        #expect(HashSlot.slot(forKey: "{user1000}.following") == HashSlot.slot(forKey: "user1000"))
        // An empty tag does not count: the whole key is hashed.
        #expect(HashSlot.slot(forKey: "foo{}{bar}") == Int(HashSlot.crc16(Array("foo{}{bar}".utf8)[...]) % 16384))
        #expect(HashSlot.slot(forKey: "foo{{bar}}zap") == HashSlot.slot(forKey: "{bar"))
        let keys = RedisKeys(prefix: "p:", key: "https://example.com/a.png")
        #expect(HashSlot.slot(forKey: keys.entry) == HashSlot.slot(forKey: keys.lease))
    }

    /// `CLUSTER SHARDS` as Redis 7 sends it in RESP2 (flat arrays), with a replica and a failed primary.
    @Test func shardsRESP2() throws {
        func node(_ port: Int, role: String, health: String = "online") -> RESPValue {
            .array([
                bulk("id"), bulk("abc\(port)"), bulk("port"), .integer(Int64(port)), bulk("ip"), bulk("127.0.0.1"),
                bulk("endpoint"), bulk("127.0.0.1"), bulk("role"), bulk(role), bulk("replication-offset"),
                .integer(0), bulk("health"), bulk(health),
            ])
        }
        let reply = RESPValue.array([
            .array([
                bulk("slots"), .array([.integer(0), .integer(5460)]), bulk("nodes"),
                .array([node(7000, role: "master"), node(7003, role: "replica")]),
            ]),
            .array([
                bulk("slots"), .array([.integer(5461), .integer(10922)]), bulk("nodes"),
                .array([node(7001, role: "master")]),
            ]),
            .array([
                bulk("slots"), .array([.integer(10923), .integer(16000), .integer(16001), .integer(16383)]),
                bulk("nodes"),
                .array([node(7002, role: "master", health: "fail"), node(7005, role: "master")]),
            ]),
        ])
        let map = try ClusterSlotMap.fromShards(reply, fallbackHost: "10.0.0.1", tls: false)
        #expect(map.endpoint(forSlot: 0) == .tcp(host: "127.0.0.1", port: 7000))
        #expect(map.endpoint(forSlot: 5460) == .tcp(host: "127.0.0.1", port: 7000))
        #expect(map.endpoint(forSlot: 5461) == .tcp(host: "127.0.0.1", port: 7001))
        #expect(map.endpoint(forSlot: 16383) == .tcp(host: "127.0.0.1", port: 7005))
        #expect(map.unassignedCount == 0)
        #expect(map.primaries.count == 3)
    }

    /// RESP3 maps, a node announcing `?` (use the host we asked) and `tls-port` for TLS clusters.
    @Test func shardsRESP3() throws {
        let node = RESPValue.map([
            RESPPair(key: bulk("port"), value: .integer(7000)), RESPPair(key: bulk("tls-port"), value: .integer(8000)),
            RESPPair(key: bulk("endpoint"), value: bulk("?")), RESPPair(key: bulk("role"), value: bulk("master")),
        ])
        let shard = RESPValue.map([
            RESPPair(key: bulk("slots"), value: .array([.integer(0), .integer(16383)])),
            RESPPair(key: bulk("nodes"), value: .array([node])),
        ])
        let plain = try ClusterSlotMap.fromShards(.array([shard]), fallbackHost: "10.0.0.9", tls: false)
        #expect(plain.endpoint(forSlot: 100) == .tcp(host: "10.0.0.9", port: 7000))
        let tls = try ClusterSlotMap.fromShards(.array([shard]), fallbackHost: "10.0.0.9", tls: true)
        #expect(tls.endpoint(forSlot: 100) == .tcp(host: "10.0.0.9", port: 8000))
        #expect(throws: RedisClientError.self) {
            try ClusterSlotMap.fromShards(.integer(1), fallbackHost: "h", tls: false)
        }
    }

    @Test func slotsReplyAndPartialCoverage() throws {
        let reply = RESPValue.array([
            .array([.integer(0), .integer(99), .array([bulk("127.0.0.1"), .integer(7000), bulk("id0")])]),
            .array([.integer(100), .integer(199), .array([bulk(""), .integer(7001), bulk("id1")])]),
        ])
        var map = try ClusterSlotMap.fromSlots(reply, fallbackHost: "192.168.1.2")
        #expect(map.endpoint(forSlot: 150) == .tcp(host: "192.168.1.2", port: 7001))
        #expect(map.endpoint(forSlot: 200) == nil)
        #expect(map.unassignedCount == 16384 - 200)
        map.moved(slot: 200, to: .tcp(host: "127.0.0.1", port: 7002))
        #expect(map.endpoint(forSlot: 200) == .tcp(host: "127.0.0.1", port: 7002))
        #expect(map.primaries.count == 3)
        #expect(throws: RedisClientError.self) {
            try ClusterSlotMap.fromSlots(.array([.array([.integer(5), .integer(1)])]), fallbackHost: "h")
        }
    }

    @Test func redirections() {
        #expect(
            ClusterRedirect("MOVED 3999 127.0.0.1:6381", currentHost: "x")
                == ClusterRedirect(kind: .moved, slot: 3999, endpoint: .tcp(host: "127.0.0.1", port: 6381)))
        let ask = ClusterRedirect("ASK 3999 :6381", currentHost: "10.1.1.1")
        #expect(ask?.kind == .ask && ask?.endpoint == .tcp(host: "10.1.1.1", port: 6381))
        #expect(ClusterRedirect("MOVED 1 [::1]:7000", currentHost: "x")?.endpoint == .tcp(host: "::1", port: 7000))
        for bad in ["MOVED", "MOVED x 1.2.3.4:5", "MOVED 99999 a:1", "MOVED 1 host", "ERR 1 a:1", "ASK 1 a:0"] {
            #expect(ClusterRedirect(bad, currentHost: "x") == nil, "\(bad)")
        }
    }
}

extension ClusterRedirect {
    init(kind: Kind, slot: Int, endpoint: RedisEndpoint) {
        let verb = kind == .moved ? "MOVED" : "ASK"
        guard case .tcp(let host, let port) = endpoint else { fatalError("tcp only") }
        self.init("\(verb) \(slot) \(host):\(port)", currentHost: host)!
    }
}
