import Foundation
import ImageCore
import Testing

@testable import HTTPLoader

/// One redirect hop at a time, without a server.
@Suite struct RedirectPolicyTests {
    let origin = ImageRequest(
        url: URL(string: "https://img.example.com/a/b.png")!,
        headers: [
            (name: "Authorization", value: "Bearer t"), (name: "Cookie", value: "sid=1"),
            (name: "Proxy-Authorization", value: "Basic p"), (name: "Accept", value: "image/*"),
        ])

    private func decide(
        _ status: Int, _ location: String?, from request: ImageRequest? = nil, redirects: Int = 0,
        visited: Set<String> = [], maximum: Int = 5
    ) -> RedirectPolicy.Decision {
        RedirectPolicy.decide(
            after: request ?? origin, status: status, location: location, redirects: redirects,
            visited: visited.isEmpty ? [(request ?? origin).url.absoluteString] : visited, maximum: maximum)
    }

    private func next(_ decision: RedirectPolicy.Decision) -> ImageRequest? {
        if case .follow(let request) = decision { return request }
        return nil
    }

    private func error(_ decision: RedirectPolicy.Decision) -> ImageError? {
        if case .fail(let error) = decision { return error }
        return nil
    }

    @Test func relativeLocationsResolveAndSameOriginKeepsCredentials() throws {
        let hop = try #require(next(decide(302, "../c/d.png?x=1")))
        #expect(hop.url.absoluteString == "https://img.example.com/c/d.png?x=1")
        #expect(hop[header: "Authorization"] == "Bearer t")
        #expect(hop[header: "Cookie"] == "sid=1")
        #expect(hop.method == "GET")
    }

    @Test func crossOriginHopsDropCredentials() throws {
        for target in [
            "https://cdn.example.net/x.png", "http://img.example.com/a/b.png", "https://img.example.com:8443/x",
        ] {
            let hop = try #require(next(decide(301, target)))
            #expect(hop[header: "Authorization"] == nil, "\(target)")
            #expect(hop[header: "Cookie"] == nil)
            #expect(hop[header: "Proxy-Authorization"] == nil)
            #expect(hop[header: "Accept"] == "image/*")
        }
        // The default port is the same origin.
        let samePort = try #require(next(decide(307, "https://IMG.example.com:443/z.png")))
        #expect(samePort[header: "Authorization"] == "Bearer t")
    }

    @Test func methodRewriting() throws {
        var post = origin
        post.method = "POST"
        #expect(next(decide(303, "/x", from: post))?.method == "GET")
        #expect(next(decide(302, "/x", from: post))?.method == "GET")
        #expect(next(decide(301, "/x", from: post))?.method == "GET")
        #expect(next(decide(307, "/x", from: post))?.method == "POST")
        #expect(next(decide(308, "/x", from: post))?.method == "POST")
        var head = origin
        head.method = "HEAD"
        #expect(next(decide(303, "/x", from: head))?.method == "HEAD")
    }

    @Test func limitsCyclesAndBadTargetsFail() {
        #expect(error(decide(302, "/n", redirects: 5, maximum: 5))?.code == .invalidDownloadResponse)
        #expect(next(decide(302, "/n", redirects: 4, maximum: 5)) != nil)
        let visited: Set = ["https://img.example.com/a/b.png", "https://img.example.com/loop"]
        #expect(error(decide(302, "/loop", visited: visited))?.code == .invalidDownloadResponse)
        for bad in ["file:///etc/passwd", "ftp://example.com/x", "data:image/png;base64,AAAA", "http://"] {
            #expect(error(decide(302, bad))?.code == .invalidDownloadResponse, "\(bad)")
        }
    }

    @Test func nonRedirectsAndDisabledFollowingAreFinal() {
        for (status, location) in [(200, "/x"), (304, "/x"), (300, "/x"), (302, nil), (302, "")] as [(Int, String?)] {
            guard case .final = decide(status, location) else {
                Issue.record("\(status) \(location ?? "nil") should be final")
                continue
            }
        }
        guard case .final = decide(302, "/x", maximum: 0) else {
            Issue.record("maximumRedirects 0 should make redirects final")
            return
        }
    }
}
