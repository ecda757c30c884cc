import Foundation
import Testing

@testable import HTTPLoader

@Suite struct HTTPCookieJarTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func storesAndSendsMatchingCookies() throws {
        let jar = HTTPCookieJar()
        let url = try #require(URL(string: "http://img.example.com/a/b.png"))
        jar.store(setCookieHeaders: ["sid=abc; Path=/", "scoped=1; Path=/a", "other=2; Path=/z"], from: url, now: now)
        #expect(jar.cookieHeader(for: url, now: now) == "scoped=1; sid=abc")
        #expect(jar.cookieHeader(for: URL(string: "http://img.example.com/z/1")!, now: now) == "other=2; sid=abc")
        // Host-only cookies do not go to other hosts, not even subdomains.
        #expect(jar.cookieHeader(for: URL(string: "http://cdn.img.example.com/a/b.png")!, now: now) == nil)
    }

    @Test func domainCookiesMatchSubdomainsButNeverOtherSites() throws {
        let jar = HTTPCookieJar()
        let url = try #require(URL(string: "https://img.example.com/"))
        jar.store(
            setCookieHeaders: ["d=1; Domain=.example.com", "evil=1; Domain=attacker.com", "tld=1; Domain=com"],
            from: url, now: now)
        #expect(jar.count == 1)
        #expect(jar.cookieHeader(for: URL(string: "http://cdn.example.com/x")!, now: now) == "d=1")
    }

    @Test func expirySecureAndDeletion() throws {
        let jar = HTTPCookieJar()
        let url = try #require(URL(string: "https://example.com/"))
        jar.store(
            setCookieHeaders: ["short=1; Max-Age=10", "sec=1; Secure", "old=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"],
            from: url, now: now)
        #expect(jar.cookieHeader(for: url, now: now) == "short=1; sec=1")
        #expect(jar.cookieHeader(for: URL(string: "http://example.com/")!, now: now) == "short=1")
        jar.store(setCookieHeaders: ["sec=; Max-Age=0"], from: url, now: now)  // deletes
        #expect(jar.cookieHeader(for: url, now: now) == "short=1")
        #expect(jar.cookieHeader(for: url, now: now.addingTimeInterval(11)) == nil)
        #expect(jar.count == 0)
    }

    @Test func pathMatchingFollowsRFC6265() {
        #expect(HTTPCookieJar.pathMatches("/a/b", "/a"))
        #expect(HTTPCookieJar.pathMatches("/a", "/a"))
        #expect(!HTTPCookieJar.pathMatches("/ab", "/a"))
        #expect(HTTPCookieJar.pathMatches("/a/b", "/a/"))
        #expect(HTTPCookieJar.defaultPath("/a/b.png") == "/a")
        #expect(HTTPCookieJar.defaultPath("/b.png") == "/")
    }
}

@Suite struct HTTPResponseParsingTests {
    @Test func cacheControlMaxAge() {
        #expect(HTTPResponseParsing.maxAge("public, max-age=3600") == 3600)
        #expect(HTTPResponseParsing.maxAge("no-cache") == 0)
        #expect(HTTPResponseParsing.maxAge("public") == nil)
        #expect(HTTPResponseParsing.maxAge(nil) == nil)
    }

    @Test func contentTypesAndWildcards() {
        #expect(HTTPResponseParsing.contentType("Image/PNG; charset=binary") == "image/png")
        #expect(HTTPResponseParsing.isAcceptable(contentType: "image/png", allowed: ["image/*"]))
        #expect(!HTTPResponseParsing.isAcceptable(contentType: "text/html", allowed: ["image/*"]))
        #expect(HTTPResponseParsing.isAcceptable(contentType: nil, allowed: ["image/png"]))
        #expect(HTTPResponseParsing.isAcceptable(contentType: "text/html", allowed: nil))
    }

    @Test func acceptHeaderListsTheConfiguredFormats() {
        var configuration = HTTPLoaderConfiguration()
        #expect(configuration.acceptHeader == "image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8")
        configuration.acceptedFormats = [.png]
        #expect(configuration.acceptHeader == "image/png,image/*;q=0.8")
    }
}
