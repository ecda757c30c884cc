import Foundation
import HTTPTypes
import ImageCore
import Testing

@testable import ImageService

/// Freshness: a source is reused while fresh, then revalidated with its validators; a changed source changes the
/// answer and its ETag; answers never promise more than the source allows.
@Suite struct FreshnessTests {
    @Test func aSourcesOwnLifetime() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        typealias F = FreshnessPolicy
        #expect(F.ownLifetime(headers: ["cache-control": "max-age=60"], now: now) == 60)
        #expect(F.ownLifetime(headers: ["cache-control": "max-age=60, s-maxage=10"], now: now) == 10)
        #expect(F.ownLifetime(headers: ["cache-control": "max-age=60", "age": "50"], now: now) == 10)
        #expect(F.ownLifetime(headers: ["cache-control": "max-age=60", "age": "90"], now: now) == 0)
        #expect(F.ownLifetime(headers: ["cache-control": "no-cache, max-age=60"], now: now) == 0)
        let date = HTTPDate.format(now)
        let later = HTTPDate.format(now.addingTimeInterval(300))
        #expect(F.ownLifetime(headers: ["expires": later, "date": date], now: now) == 300)
        #expect(F.ownLifetime(headers: ["expires": "0"], now: now) == 0)
        // A max-age that is not delta-seconds is invalid freshness: stale, as a bad Expires is (it used to read as
        // "says nothing", so the source got the default day).
        for invalid in ["max-age=-1", "max-age=abc", "max-age", "max-age=1.5", "s-maxage=-5, max-age=60"] {
            #expect(F.ownLifetime(headers: ["cache-control": invalid], now: now) == 0, "\(invalid)")
        }
        #expect(F.ownLifetime(headers: ["cache-control": "max-age=99999999999999999999"], now: now) == 2_147_483_647)
        #expect(F.ownLifetime(headers: ["content-type": "image/png"], now: now) == nil)
        // A private cache's lifetime: s-maxage binds shared caches only.
        #expect(F.ownPrivateLifetime(headers: ["cache-control": "max-age=60, s-maxage=10"], now: now) == 60)
        let aged = ["cache-control": "max-age=60, s-maxage=600", "age": "50"]
        #expect(F.ownPrivateLifetime(headers: aged, now: now) == 10)
        #expect(F.ownPrivateLifetime(headers: ["cache-control": "s-maxage=600"], now: now) == nil)
        #expect(F.ownPrivateLifetime(headers: ["cache-control": "no-cache, s-maxage=600"], now: now) == 0)
        let expiring = ["cache-control": "s-maxage=600", "expires": later, "date": date]
        #expect(F.ownPrivateLifetime(headers: expiring, now: now) == 300)
    }

    /// Property: the reuse time is the stated lifetime clamped to the configured bounds, and an answer's max-age
    /// never exceeds what is left of the stated lifetime (nor the configured one). Random cases, seed printed.
    @Test func clampsAndCaps() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("clampsAndCaps seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for _ in 0..<2000 {
            let minimum = Double(Int.random(in: 0...100, using: &generator))
            let maximum = minimum + Double(Int.random(in: 0...1000, using: &generator))
            let policy = FreshnessPolicy(minimumTTL: minimum, maximumTTL: maximum, defaultTTL: 500)
            let stated: Double? =
                Bool.random(using: &generator) ? nil : Double(Int.random(in: 0...2000, using: &generator))
            let freshness = policy.freshness(lifetime: stated, now: now)
            let reuse = freshness.reuseUntil.timeIntervalSince(now)
            #expect(reuse >= minimum && reuse <= maximum, "seed \(seed)")
            #expect(reuse == min(maximum, max(minimum, stated ?? 500)), "seed \(seed)")
            let configured = Int.random(in: 0...100_000, using: &generator)
            let elapsed = Double(Int.random(in: 0...3000, using: &generator))
            let maxAge = FreshnessPolicy.answerMaxAge(
                configured: configured, sourceFreshUntil: freshness.sourceFreshUntil,
                now: now.addingTimeInterval(elapsed))
            if let stated {
                #expect(maxAge <= configured && Double(maxAge) <= max(0, stated - elapsed), "seed \(seed)")
            } else {
                #expect(maxAge == configured, "seed \(seed): a source that states nothing does not cap the answer")
            }
            #expect(maxAge >= 0)
            // With a lifetime of its own for private caches: max-age within it, s-maxage within the shared one.
            let statedPrivate: Double? =
                Bool.random(using: &generator) ? nil : Double(Int.random(in: 0...2000, using: &generator))
            let split = policy.freshness(lifetime: stated, privateLifetime: statedPrivate, now: now)
            #expect(split.reuseUntil == freshness.reuseUntil, "seed \(seed): the service's own reuse is the shared one")
            let at = now.addingTimeInterval(elapsed)
            let ages = FreshnessPolicy.answerAges(configured: configured, freshness: split, now: at)
            let shared = ages.sharedMaxAge ?? ages.maxAge
            #expect(ages.maxAge >= 0 && ages.maxAge <= configured && shared <= configured, "seed \(seed)")
            if let bound = statedPrivate ?? stated {
                #expect(Double(ages.maxAge) <= max(0, bound - elapsed), "seed \(seed)")
            }
            if let stated { #expect(Double(shared) <= max(0, stated - elapsed), "seed \(seed)") }
            #expect(ages.sharedMaxAge != ages.maxAge, "seed \(seed): s-maxage is stated only when it differs")
        }
    }

    /// A stale source is revalidated with its ETag; the origin's 304 keeps it (no render: the stored result stands),
    /// and a changed source changes the bytes, the ETag, and what an old ETag gets.
    @Test func revalidationAndChange() async throws {
        let version = Locked(1)
        let first = try ServiceImages.png(width: 64, height: 64, colour: 10)
        let second = try ServiceImages.png(width: 64, height: 32, colour: 240)
        let fixture = try await ServiceFixture.start { request in
            let current = version.value
            if request.header("If-None-Match") == "\"v\(current)\"" { return .respond(status: .notModified) }
            return .respond(
                headers: [
                    ("Content-Type", "image/png"), ("ETag", "\"v\(current)\""), ("Cache-Control", "max-age=0"),
                ],
                body: current == 1 ? first : second)
        }
        defer { Task { await fixture.stop() } }
        let one = await fixture.get("/image.png", "w=32&format=png")
        #expect(one.status == .ok)
        #expect(one.headers[.cacheControl] == "public, max-age=0")
        let tag = try #require(one.headers[.eTag])
        // Stale at once (max-age=0): revalidated, 304, same thumbnail, no second render.
        let two = await fixture.get("/image.png", "w=32&format=png")
        #expect(two.status == .ok && two.headers[.eTag] == tag && two.body == one.body)
        #expect(fixture.origin.requests(to: "/image.png").last?.header("If-None-Match") == "\"v1\"")
        #expect(fixture.count("decode") == 1)
        #expect(fixture.counter("revalidations_total", [("outcome", "not_modified")]) >= 1)
        let notModified = await fixture.get("/image.png", "w=32&format=png", headers: [.ifNoneMatch: tag])
        #expect(notModified.status == .notModified)
        // The origin changes: the next answer is the new image, with a new ETag; the old one is no longer current.
        version.withLock { $0 = 2 }
        let three = await fixture.get("/image.png", "w=32&format=png", headers: [.ifNoneMatch: tag])
        #expect(three.status == .ok)
        #expect(three.headers[.eTag] != tag)
        #expect(try ServiceImages.size(three) == (32, 16))
        #expect(fixture.counter("revalidations_total", [("outcome", "changed")]) == 1)
    }

    /// The configured minimum TTL keeps a source that says `max-age=0` for that long — and the answer still says 0.
    @Test func theMinimumTTLProtectsTheOriginWithoutPromisingMore() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start({ $0.freshness = FreshnessPolicy(minimumTTL: 3600) }) { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=0")], body: image)
        }
        defer { Task { await fixture.stop() } }
        for size in [20, 21, 22] {
            let answer = await fixture.get("/a.png", "w=\(size)")
            #expect(answer.status == .ok)
            #expect(answer.headers[.cacheControl] == "public, max-age=0")
        }
        #expect(fixture.origin.requests(to: "/a.png").count == 1)
    }

    /// A source with a long lifetime caps the answer at what is left of it; `stale-while-revalidate` only goes out
    /// when the source did not cap `max-age`.
    @Test func answersNeverPromiseMoreThanTheSource() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start { request in
            let control = request.path == "/short.png" ? "max-age=120" : "public"
            return .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", control)], body: image)
        }
        defer { Task { await fixture.stop() } }
        let short = await fixture.get("/short.png")
        let maxAge = short.headers[.cacheControl].flatMap { $0.split(separator: "=").last }.flatMap { Int($0) }
        #expect(maxAge.map { $0 <= 120 && $0 >= 110 } == true, "\(short.headers[.cacheControl] ?? "-")")
        let unstated = await fixture.get("/long.png")
        #expect(unstated.headers[.cacheControl] == "public, max-age=86400, stale-while-revalidate=86400")
    }

    /// A source that lets shared caches keep it longer than browsers (`s-maxage` beside `max-age`): the answer says
    /// both, each within the source's own. Before, one `max-age` of the shared lifetime promised a browser 600 s of a
    /// source it may keep 60 s.
    @Test func browsersAndSharedCachesGetWhatTheSourceAllowsEach() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start { request in
            let control = request.path == "/split.png" ? "max-age=60, s-maxage=600" : "s-maxage=600"
            return .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", control)], body: image)
        }
        defer { Task { await fixture.stop() } }
        for _ in 0..<2 {  // made, then from the cache
            let split = await fixture.get("/split.png")
            let fields = Dictionary(
                (split.headers[.cacheControl] ?? "").split(separator: ",").compactMap { part in
                    let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=")
                    return pair.count == 2 ? (String(pair[0]), Int(pair[1]) ?? -1) : nil
                }, uniquingKeysWith: { $1 })
            #expect((50...60).contains(fields["max-age"] ?? -1), "\(split.headers[.cacheControl] ?? "-")")
            #expect((590...600).contains(fields["s-maxage"] ?? -1), "\(split.headers[.cacheControl] ?? "-")")
            #expect(fields["stale-while-revalidate"] == nil)
        }
        // Only s-maxage: a browser is promised no more than a shared cache, and nothing is said twice.
        let shared = await fixture.get("/shared.png")
        let control = shared.headers[.cacheControl] ?? "-"
        #expect(!control.contains("s-maxage") && control.hasPrefix("public, max-age=59"), "\(control)")
        #expect(fixture.origin.requests(to: "/split.png").count == 1)
    }
}
