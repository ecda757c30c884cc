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

    @Test func publicSuffixDomainsAreRefusedWithTheSystemList() throws {
        let jar = HTTPCookieJar()
        let url = try #require(URL(string: "https://shop.example.co.uk/"))
        jar.store(
            setCookieHeaders: ["uk=1; Domain=co.uk", "site=1; Domain=example.co.uk", "host=1"], from: url, now: now)
        #expect(jar.count == 2)
        #expect(jar.cookieHeader(for: URL(string: "https://other.co.uk/")!, now: now) == nil)
        #expect(jar.cookieHeader(for: URL(string: "https://www.example.co.uk/")!, now: now) == "site=1")
        // A site on a shared hosting suffix cannot set a cookie for every other site there.
        let pages = try #require(URL(string: "https://alice.github.io/"))
        jar.store(setCookieHeaders: ["all=1; Domain=github.io"], from: pages, now: now)
        #expect(jar.cookieHeader(for: URL(string: "https://mallory.github.io/")!, now: now) == nil)
        // A Domain equal to a host that is itself a suffix stays host-only (RFC 6265 §5.3 step 5).
        let suffixHost = try #require(URL(string: "https://github.io/"))
        jar.store(setCookieHeaders: ["own=1; Domain=github.io"], from: suffixHost, now: now)
        #expect(jar.cookieHeader(for: suffixHost, now: now) == "own=1")
        #expect(jar.cookieHeader(for: URL(string: "https://bob.github.io/")!, now: now) == nil)
    }

    @Test func theBundledListAndTheSystemFileAgree() throws {
        let system = try #require(try? String(contentsOfFile: PublicSuffixList.systemPath, encoding: .utf8))
        let parsed = PublicSuffixList(listText: system)
        for list in [parsed, PublicSuffixList.bundled] {
            #expect(list.isPublicSuffix("com"))
            #expect(list.isPublicSuffix("co.uk"))
            #expect(list.isPublicSuffix("github.io"))
            #expect(!list.isPublicSuffix("example.com"))
            #expect(list.registrableDomain(of: "a.b.example.co.uk") == "example.co.uk")
            #expect(list.registrableDomain(of: "x.alice.github.io") == "alice.github.io")
        }
        // Wildcards and exceptions of the real list: *.ck is public, www.ck is not.
        #expect(parsed.isPublicSuffix("anything.ck"))
        #expect(!parsed.isPublicSuffix("www.ck"))
        #expect(parsed.registrableDomain(of: "a.www.ck") == "www.ck")
    }

    @Test func ipAddressesOnlyMatchThemselves() throws {
        let jar = HTTPCookieJar()
        jar.store(setCookieHeaders: ["a=1; Domain=0.0.1"], from: URL(string: "http://127.0.0.1/")!, now: now)
        jar.store(setCookieHeaders: ["b=1; Domain=127.0.0.1"], from: URL(string: "http://127.0.0.1/")!, now: now)
        #expect(jar.cookieHeader(for: URL(string: "http://127.0.0.1/x")!, now: now) == "b=1")
        #expect(jar.cookieHeader(for: URL(string: "http://10.127.0.0.1/x")!, now: now) == nil)
    }

    @Test func thePerDomainBoundEvictsTheLeastRecentlyUsed() throws {
        let jar = HTTPCookieJar(maximumCookiesPerDomain: 3, maximumCookies: 100)
        let url = try #require(URL(string: "https://a.example.com/"))
        jar.store(setCookieHeaders: ["c1=1; Path=/one", "c2=1; Path=/two", "c3=1; Path=/three"], from: url, now: now)
        // Sending c1 makes it the most recent; a fourth cookie of example.com then evicts c2, the least recent.
        #expect(jar.cookieHeader(for: URL(string: "https://a.example.com/one")!, now: now) == "c1=1")
        jar.store(setCookieHeaders: ["c4=1"], from: URL(string: "https://b.example.com/")!, now: now)
        #expect(jar.count == 3)
        #expect(jar.cookieHeader(for: URL(string: "https://a.example.com/two")!, now: now) == nil)
        #expect(jar.cookieHeader(for: URL(string: "https://a.example.com/one")!, now: now) == "c1=1")
        #expect(jar.cookieHeader(for: URL(string: "https://a.example.com/three")!, now: now) == "c3=1")
        // Another site is not affected by example.com's bound.
        jar.store(setCookieHeaders: ["o1=1", "o2=1"], from: URL(string: "https://other.org/")!, now: now)
        #expect(jar.count == 5)
    }

    @Test func theTotalBoundHoldsAgainstManySites() {
        let jar = HTTPCookieJar(maximumCookiesPerDomain: 50, maximumCookies: 100)
        for site in 0..<500 {
            jar.store(setCookieHeaders: ["s=\(site)"], from: URL(string: "https://site\(site).example/")!, now: now)
        }
        #expect(jar.count == 100)
        // The newest survive.
        #expect(jar.cookieHeader(for: URL(string: "https://site499.example/")!, now: now) == "s=499")
        #expect(jar.cookieHeader(for: URL(string: "https://site0.example/")!, now: now) == nil)
    }

    @Test func oversizedCookiesAreRefused() {
        let jar = HTTPCookieJar()
        let huge = "big=" + String(repeating: "x", count: 5000)
        jar.store(setCookieHeaders: [huge, "ok=1"], from: URL(string: "https://example.com/")!, now: now)
        #expect(jar.cookieHeader(for: URL(string: "https://example.com/")!, now: now) == "ok=1")
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
        // Invalid freshness information is stale (RFC 9111 §4.2.1), never "no lifetime given".
        #expect(HTTPResponseParsing.maxAge("max-age=-1") == 0)
        #expect(HTTPResponseParsing.maxAge("public, max-age=soon") == 0)
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
