import Foundation
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

/// What each request costs, counted by the server's own metrics: origin requests, decodes, resizes, encodes,
/// and the cache level that answered.
@Suite struct PipelineTests {
    static func count(_ server: ThumbnailServer, _ name: String, _ labels: [String: String] = [:]) -> Int {
        Int(server.metrics.value(name, labels) ?? 0)
    }

    static func work(_ server: ThumbnailServer) -> [String: Int] {
        [
            "origin": count(server, "thumbnail_origin_requests_total"),
            "decode": count(server, "thumbnail_decode_seconds_count"),
            "resize": count(server, "thumbnail_resize_seconds_count"),
            "encode": count(server, "thumbnail_encode_seconds_count"),
        ]
    }

    /// 100 identical requests at once, all cold: one origin request, one decode, one resize, one encode; every
    /// request gets the same bytes.
    @Test func aHerdOfIdenticalColdRequestsDoesTheWorkOnce() async throws {
        let origin = TestOrigin(["/photo.jpg": .init(data: try TestImages.jpeg(width: 1200, height: 800), delay: 0.3)])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer({ $0.queueLimit = 1 }) { server, base in
                let url = base + Live.thumbnailPath(source: originBase + "/photo.jpg", "w=300&h=300")
                let replies = try await withThrowingTaskGroup(of: Live.Reply.self) { group in
                    for _ in 0..<100 { group.addTask { try await Live.get(url) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(replies.allSatisfy { $0.status == 200 }, "\(Set(replies.map(\.status)))")
                #expect(Set(replies.map(\.body)).count == 1)
                #expect(try replies[0].image().width == 300)
                #expect(origin.hits("/photo.jpg") == 1)
                #expect(Self.work(server) == ["origin": 1, "decode": 1, "resize": 1, "encode": 1])
                // The others joined the flight (or, arriving after it, hit memory).
                let joined = Self.count(server, "thumbnail_coalesced_total", ["kind": "result"])
                let memory = Self.count(server, "thumbnail_cache_hits_total", ["kind": "result", "level": "memory"])
                #expect(joined + memory == 99, "joined \(joined), memory hits \(memory)")
                #expect(Self.count(server, "thumbnail_cache_misses_total", ["kind": "result"]) == 1)
            }
        }
    }

    /// A result hit is the stored bytes: no decode, no encode. A source hit skips the origin; sizes of one source
    /// share its one download. Hits are counted at the level that had them, per kind.
    @Test func resultsAndSourcesAreCachedApartAndCountedPerLevel() async throws {
        let origin = TestOrigin(["/photo.jpg": .init(data: try TestImages.jpeg())])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-levels-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Live.withOrigin(origin) { originBase, _ in
            let source = originBase + "/photo.jpg"
            try await Live.withServer({ $0.cacheDirectory = directory }) { server, base in
                let first = try await Live.get(base + Live.thumbnailPath(source: source, "w=100"))
                let again = try await Live.get(base + Live.thumbnailPath(source: source, "w=100"))
                #expect(first.body == again.body)
                #expect(Self.work(server) == ["origin": 1, "decode": 1, "resize": 1, "encode": 1])
                #expect(Self.count(server, "thumbnail_cache_hits_total", ["kind": "result", "level": "memory"]) == 1)
                // Another size of the same source: its source from memory, no second origin request.
                let other = try await Live.get(base + Live.thumbnailPath(source: source, "w=50"))
                #expect(try other.image().width == 50)
                #expect(Self.work(server) == ["origin": 1, "decode": 2, "resize": 2, "encode": 2])
                #expect(Self.count(server, "thumbnail_cache_hits_total", ["kind": "source", "level": "memory"]) == 1)
                #expect(Self.count(server, "thumbnail_cache_misses_total", ["kind": "source"]) == 1)
            }
            // A new server on the same disk: the result from disk (no decode, no encode), the source from disk.
            try await Task.sleep(for: .milliseconds(300))  // the disk writes are asynchronous
            try await Live.withServer({ $0.cacheDirectory = directory }) { server, base in
                let cached = try await Live.get(base + Live.thumbnailPath(source: source, "w=100"))
                #expect(try cached.status == 200 && cached.image().width == 100)
                #expect(Self.count(server, "thumbnail_cache_hits_total", ["kind": "result", "level": "disk"]) == 1)
                let fresh = try await Live.get(base + Live.thumbnailPath(source: source, "w=70"))
                #expect(try fresh.image().width == 70)
                #expect(Self.count(server, "thumbnail_cache_hits_total", ["kind": "source", "level": "disk"]) == 1)
                #expect(Self.work(server) == ["origin": 0, "decode": 1, "resize": 1, "encode": 1])
            }
        }
    }

    /// A matching `If-None-Match` is answered 304 without a decode — from the stored result, and on a result
    /// miss from the source's validators alone.
    @Test func notModifiedCostsNoDecode() async throws {
        let origin = TestOrigin([
            "/photo.jpg": .init(
                data: try TestImages.jpeg(),
                headers: ["ETag": "\"v1\"", "Last-Modified": "Tue, 01 Sep 2026 00:00:00 GMT"])
        ])
        try await Live.withOrigin(origin) { originBase, _ in
            let source = originBase + "/photo.jpg"
            let url = { @Sendable (query: String) in Live.thumbnailPath(source: source, query) }
            let etag = try await Live.withServer { server, base in
                let first = try await Live.get(base + url("w=120"))
                let etag = try #require(first.header("ETag"))
                #expect(first.header("Last-Modified") == "Tue, 01 Sep 2026 00:00:00 GMT")
                let decodes = Self.count(server, "thumbnail_decode_seconds_count")
                let cached = try await Live.get(base + url("w=120"), headers: [("If-None-Match", etag)])
                #expect(cached.status == 304 && cached.body.isEmpty)
                #expect(cached.header("ETag") == etag)
                let since = try await Live.get(
                    base + url("w=120"), headers: [("If-Modified-Since", "Wed, 02 Sep 2026 00:00:00 GMT")])
                #expect(since.status == 304)
                #expect(Self.count(server, "thumbnail_decode_seconds_count") == decodes)
                #expect(Self.count(server, "thumbnail_not_modified_total") == 2)
                return etag
            }
            // A fresh server (empty caches): the ETag comes from the source's validators; no decode, no encode.
            try await Live.withServer { server, base in
                let revalidated = try await Live.get(base + url("w=120"), headers: [("If-None-Match", etag)])
                #expect(revalidated.status == 304)
                #expect(revalidated.header("ETag") == etag)
                #expect(Self.work(server) == ["origin": 1, "decode": 0, "resize": 0, "encode": 0])
                // A stale tag gets the thumbnail, whose tag is the same one.
                let stale = try await Live.get(base + url("w=120"), headers: [("If-None-Match", "\"old\"")])
                #expect(stale.status == 200 && stale.header("ETag") == etag)
                #expect(Self.work(server) == ["origin": 1, "decode": 1, "resize": 1, "encode": 1])
            }
        }
    }

    /// A source that says `no-store` is not kept: no cache level holds it or its thumbnail, and the response says
    /// `private, no-store`.
    @Test func noStoreSourcesAreNotCached() async throws {
        let origin = TestOrigin([
            "/secret.jpg": .init(data: try TestImages.jpeg(), headers: ["Cache-Control": "no-store"])
        ])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { server, base in
                let url = base + Live.thumbnailPath(source: originBase + "/secret.jpg", "w=40")
                let first = try await Live.get(url)
                let second = try await Live.get(url)
                #expect(first.status == 200 && second.status == 200)
                #expect(first.header("Cache-Control") == "private, no-store")
                #expect(origin.hits("/secret.jpg") == 2)
            }
        }
    }
}
