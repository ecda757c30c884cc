import Foundation
import ImageCore
import ImageServiceQuery
import PNGCoder
import Testing

@testable import ImageService

/// The service's cache levels are the SDK's (a `CachesManager` over a `MemoryCache` of bytes and the disk): each
/// hit is counted at the level that had it, a lower level's hit is copied up, and the memory budget holds.
@Suite(.timeLimit(.minutes(2)))
struct CacheLevelTests {
    /// A service restarted on a warm disk serves the stored result from disk (no decode), then from memory: the
    /// disk hit was copied up. A new size of the same source finds the source on disk, then in memory.
    @Test func aDiskHitIsCountedAtTheDiskAndCopiedToMemory() async throws {
        let source = try PerceptualAndPlaceholderTests.texturedPNG()
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("image-service-levels-\(UUID())")
        defer { try? FileManager.default.removeItem(at: shared) }
        let first = try await ServiceFixture.start({ $0.cacheDirectory = shared }) { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: source)
        }
        defer { Task { await first.origin.stop() } }
        let original = await first.get("/photo.png", "w=120")
        #expect(original.status == .ok)
        try await PerceptualAndPlaceholderTests.waitForStoredResult(of: original.body.count, in: shared)
        try await Self.waitForStoredSource(of: source.count, in: shared)
        await first.stopService()

        let restarted = try first.replica { $0.cacheDirectory = shared }
        let fromDisk = await restarted.get("/photo.png", "w=120")
        #expect(fromDisk.status == .ok && fromDisk.body == original.body)
        #expect(restarted.counter("cache_hits_total", [("kind", "result"), ("level", "disk")]) == 1)
        #expect(restarted.count("decode") == 0, "served as stored")
        let fromMemory = await restarted.get("/photo.png", "w=120")
        #expect(fromMemory.body == original.body)
        #expect(restarted.counter("cache_hits_total", [("kind", "result"), ("level", "memory")]) == 1)
        #expect(restarted.counter("cache_hits_total", [("kind", "result"), ("level", "disk")]) == 1)

        _ = await restarted.get("/photo.png", "w=60")
        _ = await restarted.get("/photo.png", "w=40")
        #expect(restarted.counter("cache_hits_total", [("kind", "source"), ("level", "disk")]) == 1)
        #expect(restarted.counter("cache_hits_total", [("kind", "source"), ("level", "memory")]) == 1)
        #expect(restarted.counter("origin_requests_total") == 0, "the origin was asked only by the first service")
        await restarted.stopService()
    }

    /// With no memory budget nothing is kept in memory: every repeat is a disk hit. A source above an eighth of the
    /// budget is not kept in memory either (one huge source must not flush the rest), while its results are.
    @Test func theMemoryBudgetHolds() async throws {
        let source = try PerceptualAndPlaceholderTests.texturedPNG()
        let none = try await ServiceFixture.start({
            $0.resultMemoryBytes = 0
            $0.sourceMemoryBytes = 0
        }) { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: source)
        }
        let first = await none.get("/photo.png", "w=120")
        try await PerceptualAndPlaceholderTests.waitForStoredResult(of: first.body.count, in: none.directory)
        for _ in 0..<3 { #expect(await none.get("/photo.png", "w=120").body == first.body) }
        #expect(none.counter("cache_hits_total", [("kind", "result"), ("level", "memory")]) == 0)
        #expect(none.counter("cache_hits_total", [("kind", "result"), ("level", "disk")]) == 3)
        await none.stop()

        let small = try await ServiceFixture.start({
            $0.resultMemoryBytes = 1 << 20
            $0.sourceMemoryBytes = source.count * 8 - 1
        }) { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: source)
        }
        _ = await small.get("/photo.png", "w=120")
        try await Self.waitForStoredSource(of: source.count, in: small.directory)
        _ = await small.get("/photo.png", "w=60")
        _ = await small.get("/photo.png", "w=60")
        _ = await small.get("/photo.png", "w=40")
        #expect(small.counter("cache_hits_total", [("kind", "source"), ("level", "memory")]) == 0)
        #expect(small.counter("cache_hits_total", [("kind", "source"), ("level", "disk")]) == 2)
        #expect(small.counter("cache_hits_total", [("kind", "result"), ("level", "memory")]) == 1)
        await small.stop()
    }

    /// Waits (up to 10 s) until a file of at least `bytes` bytes is under `directory`'s source cache.
    static func waitForStoredSource(of bytes: Int, in directory: URL) async throws {
        try await ServiceFixture.waitForStoredFile(of: bytes, in: directory.appendingPathComponent("sources"))
    }

    /// A kept source without a record this version can read (another version's, or bytes put there by hand) is
    /// dropped and fetched again, then kept with its record: never answered 502 until it expires.
    @Test func aKeptSourceWithoutARecordIsFetchedAgain() async throws {
        let wide = try ServiceImages.png(width: 40, height: 20)
        let fixture = try await ServiceFixture.start { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: wide)
        }
        defer { Task { await fixture.stop() } }
        let engine = try #require(fixture.service.engine as? PipelineEngine)
        let key = ServiceKeys.sourceKey(try SourceURL("http://127.0.0.1:\(fixture.origin.port)/photo.png"))
        let square = Data(try ServiceImages.png(width: 20, height: 20))
        engine.sources.store(
            square,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: "image/png", maxAge: 3600, expiresAt: Date().addingTimeInterval(3600),
                storedAt: Date(), size: square.count),
            forKey: key)
        let answer = await fixture.get("/photo.png", "w=32&format=png")
        #expect(answer.status == .ok)
        let image = try PNGCoder.shared.decode(answer.body, options: ImageDecodeOptions())
        #expect(image.width == 32 && image.height == 16, "rendered from the origin's bytes")
        #expect(fixture.counter("origin_requests_total") == 1)
        #expect(await fixture.get("/photo.png", "w=20&format=png").status == .ok)
        #expect(fixture.counter("origin_requests_total") == 1, "kept with its record: the next size asks nobody")
    }

    /// The same for a stale one whose origin answers the revalidation 304: the bytes are current, but without a
    /// record they can't be answered with, so they are fetched whole (an unconditional request) and kept again.
    @Test func aStaleKeptSourceWithoutARecordIsFetchedWholeAfterA304() async throws {
        let wide = try ServiceImages.png(width: 40, height: 20)
        let fixture = try await ServiceFixture.start { request in
            if request.header("If-None-Match") == "\"v1\"" { return .respond(status: .notModified) }
            return .respond(
                headers: [("Content-Type", "image/png"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=3600")],
                body: wide)
        }
        defer { Task { await fixture.stop() } }
        let engine = try #require(fixture.service.engine as? PipelineEngine)
        let key = ServiceKeys.sourceKey(try SourceURL("http://127.0.0.1:\(fixture.origin.port)/photo.png"))
        let stale = Data(wide)
        engine.sources.store(
            stale,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: "image/png", etag: "\"v1\"", maxAge: 0,
                expiresAt: Date().addingTimeInterval(-1), storedAt: Date(), size: stale.count),
            forKey: key)
        let answer = await fixture.get("/photo.png", "w=32&format=png")
        #expect(answer.status == .ok)
        let requests = fixture.origin.requests(to: "/photo.png")
        #expect(requests.map { $0.header("If-None-Match") } == ["\"v1\"", nil], "revalidated, then fetched whole")
        #expect(await fixture.get("/photo.png", "w=20&format=png").status == .ok)
        #expect(fixture.origin.requests(to: "/photo.png").count == 2, "kept with its record: asks nobody")
    }
}
