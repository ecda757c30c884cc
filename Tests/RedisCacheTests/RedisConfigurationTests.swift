import Foundation
import ImageCore
import NIOCore
import Testing

@testable import RedisCache

/// URLs, keys and the entry format: pure.
@Suite struct RedisConfigurationTests {
    @Test func urls() throws {
        let plain = try RedisServerAddress(url: "redis://cache.internal")
        #expect(plain == RedisServerAddress(endpoint: .tcp(host: "cache.internal", port: 6379)))
        let full = try RedisServerAddress(url: "rediss://alice:p%40ss@10.0.0.5:6380/4")
        #expect(full.endpoint == .tcp(host: "10.0.0.5", port: 6380) && full.usesTLS)
        #expect(full.username == "alice" && full.password == "p@ss" && full.database == 4)
        let passwordOnly = try RedisServerAddress(url: "redis://:secret@h:1")
        #expect(passwordOnly.username == nil && passwordOnly.password == "secret")
        let unix = try RedisServerAddress(url: "unix:///run/redis/redis.sock?db=2&password=x")
        #expect(unix.endpoint == .unix(path: "/run/redis/redis.sock") && unix.database == 2 && unix.password == "x")
        let v6 = try RedisServerAddress(url: "redis://[::1]:7000")
        #expect(v6.endpoint == .tcp(host: "::1", port: 7000))
        for bad in ["http://h", "redis://", "redis://h/x", "redis://h:0", "unix://", "redis://h?db=-1", "::"] {
            #expect(throws: RedisConfigurationError.self, "\(bad)") { try RedisServerAddress(url: bad) }
        }
        #expect(!RedisServerAddress.redacted("redis://u:topsecret@h:1").contains("topsecret"))
    }

    @Test func topologyFromURLLists() throws {
        guard case .single = try RedisCacheConfiguration(urlList: "redis://h:1").topology else {
            Issue.record("one URL is one server")
            return
        }
        guard case .cluster(let seeds) = try RedisCacheConfiguration(urlList: "redis://a:1, redis://b:2").topology
        else {
            Issue.record("several URLs are cluster seeds")
            return
        }
        #expect(seeds.map(\.endpoint) == [.tcp(host: "a", port: 1), .tcp(host: "b", port: 2)])
        guard case .cluster = try RedisCacheConfiguration(urlList: "redis://a:1?cluster=1").topology else {
            Issue.record("cluster=1 marks a single seed")
            return
        }
        #expect(throws: RedisConfigurationError.self) { try RedisCacheConfiguration(clusterSeeds: ["redis://a:1/2"]) }
        #expect(throws: RedisConfigurationError.self) {
            try RedisCacheConfiguration(clusterSeeds: ["redis://a:1", "rediss://b:2"])
        }
        #expect(throws: RedisConfigurationError.self) { try RedisCacheConfiguration(urlList: " , ") }
    }

    @Test func keysAreHashedPrefixedAndStable() {
        let keys = RedisKeys(prefix: "img:", key: "https://example.com/a.png?token=secret")
        #expect(keys.entry.hasPrefix("img:{") && keys.entry.hasSuffix("}") && keys.entry.count == 4 + 2 + 32)
        #expect(!keys.entry.contains("secret"))
        #expect(keys.lease == keys.entry + ":lease")
        #expect(keys == RedisKeys(prefix: "img:", key: "https://example.com/a.png?token=secret"))
        #expect(keys != RedisKeys(prefix: "img:", key: "https://example.com/b.png"))
        #expect(RedisCache.globEscaped("a*b?[c]\\") == "a\\*b\\?\\[c\\]\\\\")
    }

    @Test func entryCodecRoundTripAndRejects() {
        let metadata = CacheEntryMetadata(originalKey: "k", contentType: "image/png", etag: "\"e\"", size: 3)
        let buffer = RedisEntryCodec.encode(data: Data([9, 8, 7]), metadata: metadata)
        let decoded = RedisEntryCodec.decode(buffer, key: "k")
        #expect(decoded?.data == Data([9, 8, 7]) && decoded?.metadata == metadata)
        #expect(RedisEntryCodec.decode(buffer, key: "other") == nil)
        // Every truncation and a flipped magic byte are misses, never traps.
        let bytes = Array(buffer.readableBytesView)
        for length in 0..<bytes.count where length < 9 + 20 {
            #expect(RedisEntryCodec.decode(ByteBuffer(bytes: bytes.prefix(length)), key: "k") == nil)
        }
        var flipped = bytes
        flipped[0] ^= 0xFF
        #expect(RedisEntryCodec.decode(ByteBuffer(bytes: flipped), key: "k") == nil)
        var huge = bytes
        huge.replaceSubrange(5..<9, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(RedisEntryCodec.decode(ByteBuffer(bytes: huge), key: "k") == nil)
    }
}
