import Foundation
import Testing

@testable import HTTPLoader

/// The header parsers that face servers' bytes: dates, entity tags, lengths.
@Suite struct HTTPDateTests {
    static let reference = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func theThreeHTTPFormatsAndCookieVariants() {
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            "Sun, 06-Nov-1994 08:49:37 GMT", "sun, 06 nov 1994 08:49:37 gmt", "06 Nov 1994 08:49:37",
        ] {
            #expect(HTTPDate.parse(text) == Self.reference, "\(text)")
        }
        #expect(HTTPDate.parse("Wed, 21 Oct 2015 07:28:00 GMT") == Date(timeIntervalSince1970: 1_445_412_480))
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT") == Date(timeIntervalSince1970: 951_825_600))
    }

    @Test func invalidDatesAreNil() {
        for text in [
            "", "garbage", "Sun, 06 Nov 1994", "Mon, 30 Feb 2001 00:00:00 GMT", "Mon, 31 Apr 2001 00:00:00 GMT",
            "Tue, 29 Feb 1900 00:00:00 GMT", "Sun, 06 Nov 1500 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "99999999999999999999",
            String(repeating: "1:1:1 ", count: 10_000),
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text.prefix(40))")
        }
    }

    @Test func entityTags() {
        #expect(HTTPResponseParsing.entityTag("\"abc\"") == "\"abc\"")
        #expect(HTTPResponseParsing.entityTag(" W/\"abc\" ") == "W/\"abc\"")
        #expect(HTTPResponseParsing.entityTag("\"\"") == "\"\"")
        #expect(HTTPResponseParsing.entityTag("legacy-unquoted") == "legacy-unquoted")
        #expect(HTTPResponseParsing.entityTag("\"a\"b\"") == nil)
        #expect(HTTPResponseParsing.entityTag("\"a b\"") == nil)
        #expect(HTTPResponseParsing.entityTag("\"abc") == nil)
        #expect(HTTPResponseParsing.entityTag("\"a\r\nX-Injected: 1\"") == nil)
        #expect(HTTPResponseParsing.entityTag("") == nil)
        #expect(HTTPResponseParsing.entityTag("\"" + String(repeating: "a", count: 2000) + "\"") == nil)
    }

    @Test func contentLengths() {
        #expect(HTTPResponseParsing.contentLength(" 123 ") == 123)
        #expect(HTTPResponseParsing.contentLength("-1") == nil)
        #expect(HTTPResponseParsing.contentLength("12, 12") == nil)
        #expect(HTTPResponseParsing.contentLength("99999999999999999999999") == nil)
        #expect(HTTPResponseParsing.contentLength("") == nil)
        #expect(HTTPResponseParsing.contentLength("\t42\t") == 42)
        #expect(HTTPResponseParsing.contentLength(" \t ") == nil)
    }

    @Test func contentTypesLoseParametersAndBlanksOnly() {
        #expect(HTTPResponseParsing.contentType(" \tImage/WebP ; q=1") == "image/webp")
        #expect(HTTPResponseParsing.contentType("image/png") == "image/png")
        #expect(HTTPResponseParsing.contentType("image/pngé ") == "image/pngé")
        #expect(HTTPResponseParsing.contentType("; image/png") == nil)
        #expect(HTTPResponseParsing.contentType(" \t") == nil)
        #expect(HTTPResponseParsing.contentType(nil) == nil)
    }

    @Test func metadataKeepsCacheControlAndDropsABadETag() {
        let response = HTTPResponseParsing.metadata(
            statusCode: 200,
            headers: [
                (name: "Content-Type", value: "IMAGE/PNG; q=1"), (name: "Cache-Control", value: "private"),
                (name: "cache-control", value: "max-age=60"), (name: "ETag", value: "\"bad\r\""),
                (name: "Content-Length", value: "10"),
            ], url: nil)
        #expect(response.contentType == "image/png")
        #expect(response.headers["cache-control"] == "private, max-age=60")
        #expect(response.cacheControl.isPrivate && response.cacheControl.maxAge == 60)
        #expect(response.maxAge == 60)
        #expect(response.etag == nil)
        #expect(response.expectedContentLength == 10)
        let noStore = HTTPResponseParsing.metadata(
            statusCode: 200, headers: [(name: "Cache-Control", value: "no-store, max-age=60")], url: nil)
        #expect(noStore.cacheControl.noStore)
        #expect(noStore.maxAge == 0)
    }

    @Test func randomHeaderValuesNeverTrapAndKeepTheirInvariants() {
        // A fixed-seed generator over the bytes that matter to these parsers (until the libFuzzer target runs).
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let alphabet = Array(" \t,;=:\"/-W0123456789aAzZ\r\n\u{7F}\u{80}GMTNovSunmax-ageprivate".utf8)
        let jar = HTTPCookieJar()
        for _ in 0..<5000 {
            let length = Int(next() % 64)
            let bytes = (0..<length).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            let text = String(decoding: bytes, as: UTF8.self)
            if let date = HTTPDate.parse(text) { #expect(date.timeIntervalSince1970 >= -11_644_473_600) }
            if let tag = HTTPResponseParsing.entityTag(text) {
                #expect(!tag.utf8.contains { $0 < 0x20 || $0 == 0x7F })
            }
            _ = HTTPResponseParsing.contentType(text)
            _ = HTTPResponseParsing.contentLength(text)
            _ = HTTPResponseParsing.metadata(
                statusCode: 200, headers: [(name: "Cache-Control", value: text), (name: "ETag", value: text)], url: nil)
            jar.store(setCookieHeaders: [text], from: URL(string: "https://a.example.com/p/q")!)
            if let header = jar.cookieHeader(for: URL(string: "https://a.example.com/p/q")!) {
                #expect(!header.utf8.contains { $0 == 0x0D || $0 == 0x0A })
            }
        }
        #expect(jar.count <= jar.maximumCookiesPerDomain)
    }
}
