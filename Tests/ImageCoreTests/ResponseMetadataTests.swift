import Foundation
import ImageCore
import Testing

/// `ResponseMetadata` keeps its fields in a shared box: it must still behave as a plain struct of them.
@Suite struct ResponseMetadataTests {
    static let full = ResponseMetadata(
        url: URL(string: "https://example.com/a.png"), statusCode: 200, contentType: "image/png", etag: "\"e\"",
        lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", maxAge: 60, expectedContentLength: 42,
        headers: ["cache-control": "max-age=60", "x-a": "1"])

    @Test func aCopyChangesAlone() {
        let original = Self.full
        var copy = original
        copy.url = URL(string: "https://example.com/b.png")
        copy.statusCode = 203
        copy.contentType = "image/webp"
        copy.etag = nil
        copy.lastModified = nil
        copy.maxAge = 0
        copy.expectedContentLength = nil
        copy.headers["x-b"] = "2"
        #expect(original == Self.full)
        #expect(original.url?.absoluteString == "https://example.com/a.png" && original.statusCode == 200)
        #expect(original.contentType == "image/png" && original.etag == "\"e\"" && original.maxAge == 60)
        #expect(
            original.expectedContentLength == 42 && original.headers == ["cache-control": "max-age=60", "x-a": "1"])
        #expect(copy.url?.absoluteString == "https://example.com/b.png" && copy.statusCode == 203)
        #expect(copy.contentType == "image/webp" && copy.etag == nil && copy.lastModified == nil)
        #expect(copy.maxAge == 0 && copy.expectedContentLength == nil && copy.headers["x-b"] == "2")
        #expect(copy != original)
    }

    @Test func equalityAndHashingFollowTheFieldsHoweverTheValueWasMade() {
        var built = ResponseMetadata()
        built.url = URL(string: "https://example.com/a.png")
        built.statusCode = 200
        built.contentType = "image/png"
        built.etag = "\"e\""
        built.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        built.maxAge = 60
        built.expectedContentLength = 42
        built.headers = ["x-a": "1", "cache-control": "max-age=60"]
        #expect(built == Self.full)
        #expect(built.hashValue == Self.full.hashValue)
        #expect(Set([built, Self.full]).count == 1)
        #expect(built.cacheControl.maxAge == 60)

        // The empty value (shared by every loader that knows no response) equals one emptied field by field.
        var emptied = ResponseMetadata(statusCode: 1, headers: ["a": "b"])
        emptied.statusCode = nil
        emptied.headers = [:]
        #expect(emptied == ResponseMetadata())
        #expect(emptied.hashValue == ResponseMetadata().hashValue)
        // Each field on its own tells two values apart.
        let variants: [ResponseMetadata] = [
            ResponseMetadata(url: URL(string: "https://example.com/")), ResponseMetadata(statusCode: 200),
            ResponseMetadata(contentType: "image/png"), ResponseMetadata(etag: "\"e\""),
            ResponseMetadata(lastModified: "x"), ResponseMetadata(maxAge: 1),
            ResponseMetadata(expectedContentLength: 1),
            ResponseMetadata(headers: ["a": "b"]), ResponseMetadata(),
        ]
        #expect(Set(variants).count == variants.count)
    }

    @Test func valuesCrossThreadsWhileCopiesChange() async {
        let shared = Self.full
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    var mine = shared
                    for step in 0..<1_000 { mine.statusCode = index * 1_000 + step }
                    return mine.statusCode == index * 1_000 + 999 && shared == Self.full
                }
            }
            for await kept in group { #expect(kept) }
        }
    }
}
