import Foundation
import HTTPTypes
import ImageCore
import Testing

@testable import ImageService

/// The `Last-Modified` an answer states: an IMF-fixdate never later than the answer, whatever the source said;
/// the source's own text is what revalidates it at the origin.
@Suite struct LastModifiedTests {
    @Test func statedValues() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let past = now.addingTimeInterval(-86_400)
        #expect(StatedLastModified.value(HTTPDate.format(past), now: now) == HTTPDate.format(past))
        // The obsolete formats a recipient must read are restated in the one a sender may write.
        #expect(StatedLastModified.value("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(StatedLastModified.value("Sun Nov  6 08:49:37 1994", now: now) == "Sun, 06 Nov 1994 08:49:37 GMT")
        // A date ahead of the clock is stated as now (RFC 9110 §8.8.2.1).
        #expect(
            StatedLastModified.value(HTTPDate.format(now.addingTimeInterval(3600)), now: now) == HTTPDate.format(now))
        for garbage in ["yesterday", "", "0", "-1", "Tue, 99 Foo 2026 00:00:00 GMT"] {
            #expect(StatedLastModified.value(garbage, now: now) == nil, "\(garbage)")
        }
        #expect(StatedLastModified.value(nil, now: now) == nil)
    }

    /// Through the service: a source's future date is stated as no later than the answer; text that is no date is
    /// not passed on; a client's `If-Modified-Since` is judged against what it was told; and the source is
    /// revalidated at the origin with its own text.
    @Test(arguments: ["future", "garbage", "obsolete"])
    func answersStateAValidDate(_ kind: String) async throws {
        let png = try ServiceImages.png(width: 64, height: 64, colour: 90)
        let sourceValue: String =
            switch kind {
            case "future": HTTPDate.format(Date().addingTimeInterval(365 * 86_400))
            case "garbage": "last tuesday"
            default: "Sunday, 06-Nov-94 08:49:37 GMT"
            }
        let fixture = try await ServiceFixture.start { request in
            if request.header("If-Modified-Since") == sourceValue { return .respond(status: .notModified) }
            return .respond(
                headers: [
                    ("Content-Type", "image/png"), ("Last-Modified", sourceValue), ("Cache-Control", "max-age=0"),
                ],
                body: png)
        }
        defer { Task { await fixture.stop() } }
        let before = Date()
        let first = await fixture.get("/lm.png", "w=32&format=png")
        #expect(first.status == .ok)
        let stated = first.headers[.lastModified]
        switch kind {
        case "garbage":
            #expect(stated == nil, "text that is no date is not passed on")
        case "future":
            let date = try #require(stated.flatMap(HTTPDate.parse), "stated: \(stated ?? "none")")
            #expect(date <= Date() && date >= before.addingTimeInterval(-1))
            #expect(stated == HTTPDate.format(date))
        default:
            #expect(stated == "Sun, 06 Nov 1994 08:49:37 GMT")
        }
        // Stale at once: the next request revalidates the source with the origin's own text.
        let again = await fixture.get("/lm.png", "w=32&format=png")
        #expect(again.status == .ok)
        if kind != "garbage" {
            #expect(fixture.origin.requests(to: "/lm.png").last?.header("If-Modified-Since") == sourceValue)
        }
        // A client's If-Modified-Since, alone, is judged against the date it was told.
        if let stated, kind == "obsolete" {
            let notModified = await fixture.get("/lm.png", "w=32&format=png", headers: [.ifModifiedSince: stated])
            #expect(notModified.status == .notModified)
            #expect(notModified.headers[.lastModified] == stated)
        }
    }
}
