import Foundation
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

/// Signed URLs and the source policy, over live HTTP.
@Suite struct SecurityTests {
    static let oldKey = "00112233445566778899aabbccddeeff"
    static let newKey = "ffeeddccbbaa99887766554433221100"

    /// Only correctly signed requests pass; both keys of a rotation do; unsigned ones only behind the flag.
    @Test func signedRequestsAndKeyRotation() async throws {
        let origin = TestOrigin(["/a.jpg": .init(data: try TestImages.jpeg())])
        try await Live.withOrigin(origin) { originBase, _ in
            let query = "url=\(QueryString.encode(originBase + "/a.jpg"))&w=32"
            let old = try URLSigner(encodedKeys: [Self.oldKey])
            let new = try URLSigner(encodedKeys: [Self.newKey])
            try await Live.withServer({
                $0.allowUnsigned = false
                $0.signingKeys = [Self.newKey, Self.oldKey]
            }) { _, base in
                try await Live.expectStatus(base + new.sign(path: "/thumbnail", query: query), 200)
                try await Live.expectStatus(base + old.sign(path: "/thumbnail", query: query), 200)
                let unsigned = try await Live.get(base + "/thumbnail?" + query)
                #expect(unsigned.status == 403 && unsigned.text.contains("not signed"))
                let tampered = new.sign(path: "/thumbnail", query: query).replacingOccurrences(of: "w=32", with: "w=33")
                try await Live.expectStatus(base + tampered, 403)
                let stranger = try URLSigner(encodedKeys: ["0102030405060708090a0b0c0d0e0f10"])
                try await Live.expectStatus(base + stranger.sign(path: "/thumbnail", query: query), 403)
                let expired = query + "&expires=1000"
                try await Live.expectStatus(base + new.sign(path: "/thumbnail", query: expired), 403)
            }
            // With the flag, unsigned requests pass (the benchmark's mode); a wrong signature still fails.
            try await Live.withServer({
                $0.allowUnsigned = true
                $0.signingKeys = [Self.newKey]
            }) { _, base in
                try await Live.expectStatus(base + "/thumbnail?" + query, 200)
                try await Live.expectStatus(base + old.sign(path: "/thumbnail", query: query), 403)
            }
        }
        // No key and no flag: the server refuses to start.
        await #expect(throws: ConfigurationError.self) {
            var configuration = ThumbnailServerConfiguration()
            configuration.allowUnsigned = false
            _ = try await ThumbnailServer(configuration)
        }
    }

    /// Every way to spell a forbidden source gets 403 (or 400 where the URL is malformed), and the origin is never
    /// contacted.
    @Test func sourcesThatTryToFoolThePolicy() async throws {
        let origin = TestOrigin(["/a.jpg": .init(data: try TestImages.jpeg())])
        try await Live.withOrigin(origin) { _, port in
            let resolver = StaticResolver([
                "allowed.test": [[IPAddress("127.0.0.1")!]],
                "allowed.test.evil.test": [[IPAddress("127.0.0.1")!]],
                "evil.test": [[IPAddress("127.0.0.1")!]],
            ])
            try await Live.withServer({
                $0.allowedHosts = ["allowed.test"]
                $0.resolver = resolver
            }) { _, base in
                let refused: [(String, Int)] = [
                    ("http://allowed.test@evil.test:\(port)/a.jpg", 400),
                    ("http://allowed.test:\(port)@evil.test:\(port)/a.jpg", 400),
                    ("http://allowed.test.evil.test:\(port)/a.jpg", 403),
                    ("http://evil.test:\(port)/a.jpg#@allowed.test", 403),
                    ("http://evil.test:\(port)/?@allowed.test/a.jpg", 403),
                    ("http://allowed%2etest:\(port)/a.jpg", 400),
                    ("http://ａllowed.test:\(port)/a.jpg", 400),
                    ("http://allowed.test\\@evil.test:\(port)/a.jpg", 400),
                    ("http://127.0.0.1:\(port)/a.jpg", 403),
                    ("http://2130706433:\(port)/a.jpg", 400),
                ]
                for (source, status) in refused {
                    let reply = try await Live.get(base + Live.thumbnailPath(source: source, "w=10"))
                    #expect(reply.status == status, "\(source): \(reply.status) \(reply.text)")
                }
                #expect(origin.totalHits == 0)
                // The allowed spellings pass: case and a trailing dot don't matter.
                for source in ["http://allowed.test:\(port)/a.jpg", "http://ALLOWED.test.:\(port)/a.jpg"] {
                    let reply = try await Live.get(base + Live.thumbnailPath(source: source, "w=10"))
                    #expect(reply.status == 200, "\(source): \(reply.text)")
                }
                #expect(origin.hits(host: "allowed.test") == 1)
            }
        }
    }

    /// Loopback, private, link-local and mapped addresses are refused by what a name resolves to, and the
    /// connection is never tried; ports and names alone don't matter.
    @Test func addressesAreJudgedByTheResolvedAddress() async throws {
        let origin = TestOrigin(["/a.jpg": .init(data: try TestImages.jpeg())])
        try await Live.withOrigin(origin) { _, port in
            let names: [String: String] = [
                "loopback.test": "127.0.0.2", "private.test": "10.0.0.7", "metadata.test": "169.254.169.254",
                "mapped.test": "::ffff:127.0.0.1", "ula.test": "fd00::1", "mixed.test": "127.0.0.1",
            ]
            var answers = names.mapValues { [[IPAddress($0)!]] }
            // A name with a public and a loopback address is refused as a whole.
            answers["mixed.test"] = [[IPAddress("93.184.216.34")!, IPAddress("127.0.0.1")!]]
            let resolver = StaticResolver(answers)
            try await Live.withServer({
                $0.resolver = resolver
                $0.allowedAddresses = []  // nothing exempt
            }) { _, base in
                for name in names.keys.sorted() {
                    let reply = try await Live.get(
                        base + Live.thumbnailPath(source: "http://\(name):\(port)/a.jpg", "w=10"))
                    #expect(reply.status == 403, "\(name): \(reply.status) \(reply.text)")
                    // The client is not told where the name points (that would map internal names for anyone).
                    #expect(!reply.text.contains(names[name]!) && reply.text.contains("address is not allowed"))
                    #expect(resolver.callCount(name) == 1)
                }
                for literal in ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "169.254.169.254", "0.0.0.0"] {
                    let reply = try await Live.get(
                        base + Live.thumbnailPath(source: "http://\(literal):\(port)/a.jpg", "w=10"))
                    #expect(reply.status == 403, "\(literal): \(reply.status) \(reply.text)")
                }
                #expect(origin.totalHits == 0)
            }
        }
    }

    /// Every redirect hop is judged like the first: a hop to a host off the allowlist, or to a name that resolves
    /// to a private address, is refused before it is contacted; hops that stay inside are followed; a loop is the
    /// origin's fault (502).
    @Test func everyRedirectHopIsChecked() async throws {
        let origin = TestOrigin(["/image.jpg": .init(data: try TestImages.jpeg())])
        try await Live.withOrigin(origin) { originBase, port in
            origin.set("/to-private", .init(status: 302, headers: ["Location": "http://inside.test:\(port)/image.jpg"]))
            origin.set(
                "/to-outside", .init(status: 302, headers: ["Location": "http://outside.test:\(port)/image.jpg"]))
            origin.set("/to-literal", .init(status: 301, headers: ["Location": "http://127.0.0.2:\(port)/image.jpg"]))
            origin.set("/inside", .init(status: 307, headers: ["Location": "/image.jpg"]))
            origin.set("/chain", .init(status: 302, headers: ["Location": "/to-private"]))
            origin.set("/loop", .init(status: 302, headers: ["Location": "/loop"]))
            let resolver = StaticResolver([
                "inside.test": [[IPAddress("10.0.0.9")!]], "outside.test": [[IPAddress("127.0.0.1")!]],
            ])
            try await Live.withServer({
                $0.resolver = resolver
                $0.allowedHosts = ["127.0.0.1", "inside.test"]
            }) { _, base in
                for (path, status) in [
                    ("/to-private", 403), ("/to-outside", 403), ("/to-literal", 403), ("/chain", 403), ("/loop", 502),
                    ("/inside", 200),
                ] {
                    let reply = try await Live.get(base + Live.thumbnailPath(source: originBase + path, "w=16"))
                    #expect(reply.status == status, "\(path): \(reply.status) \(reply.text)")
                }
                #expect(origin.hits("/image.jpg") == 1, "only the redirect that stayed inside reached the image")
                #expect(resolver.callCount("outside.test") == 0, "a host off the allowlist is not even resolved")
            }
        }
    }

    /// DNS rebinding: a name that answers an allowed address first and a forbidden one next. The server resolves
    /// once per request and connects to exactly the address it checked, so the first request reaches the allowed
    /// origin and the second is refused; the origin on the forbidden address is never contacted.
    @Test func aResolverThatChangesItsAnswerCannotMoveTheConnection() async throws {
        let good = TestOrigin([
            "/a.jpg": .init(data: try TestImages.jpeg()), "/b.jpg": .init(data: try TestImages.jpeg()),
        ])
        let evil = TestOrigin([
            "/a.jpg": .init(data: try TestImages.jpeg()), "/b.jpg": .init(data: try TestImages.jpeg()),
        ])
        try await Live.withOrigin(good) { _, port in
            // The same port on another loopback address: a connection that re-resolved would land here.
            try await Live.withOrigin(evil, host: "127.0.0.2", port: port) { _, _ in
                let resolver = StaticResolver(["rebind.test": [[IPAddress("127.0.0.1")!], [IPAddress("127.0.0.2")!]]])
                try await Live.withServer({
                    $0.resolver = resolver
                    $0.dnsCacheSeconds = 0
                }) { _, base in
                    let first = try await Live.get(
                        base + Live.thumbnailPath(source: "http://rebind.test:\(port)/a.jpg", "w=8"))
                    #expect(first.status == 200, "\(first.text)")
                    let second = try await Live.get(
                        base + Live.thumbnailPath(source: "http://rebind.test:\(port)/b.jpg", "w=8"))
                    #expect(second.status == 403, "\(second.text)")
                    #expect(resolver.callCount("rebind.test") == 2, "one resolution per request")
                    #expect(good.hits("/a.jpg") == 1 && good.hits(host: "rebind.test") == 1)
                    #expect(evil.totalHits == 0)
                }
            }
        }
    }

    /// Limits: source bytes, pixels per frame, an animation's frames and its pixels summed over the frames.
    @Test func sourceLimits() async throws {
        let spinner = try GIFCoder.shared.encode(
            SampleImages.spinner(width: 100, height: 100, frames: 6), as: .gif, options: ImageEncodeOptions())
        let origin = TestOrigin([
            "/photo.jpg": .init(data: try TestImages.jpeg(width: 640, height: 480)),
            "/spinner.gif": .init(data: spinner, contentType: "image/gif"),
        ])
        try await Live.withOrigin(origin) { originBase, _ in
            let photo = Live.thumbnailPath(source: originBase + "/photo.jpg", "w=10")
            try await Live.withServer({ $0.maxSourceBytes = 1000 }) { _, base in
                try await Live.expectStatus(base + photo, 413)
            }
            try await Live.withServer({ $0.maxSourcePixels = 640 * 480 - 1 }) { _, base in
                try await Live.expectStatus(base + photo, 413)
            }
            try await Live.withServer({ $0.maxSourcePixels = 100 * 100 * 5 }) { _, base in
                // Six 100x100 frames: a still of the first frame fits, the animation (60,000 pixels) does not.
                let still = try await Live.get(base + Live.thumbnailPath(source: originBase + "/spinner.gif", "w=20"))
                #expect(still.status == 200)
                let animated = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/spinner.gif", "w=20&anim=1&format=gif"))
                #expect(animated.status == 413, "\(animated.text)")
            }
            try await Live.withServer({ $0.maxSourceFrames = 5 }) { _, base in
                let animated = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/spinner.gif", "w=20&anim=1&format=gif"))
                #expect(animated.status == 413, "\(animated.text)")
            }
            try await Live.withServer({ $0.allowedWidths = [64, 128] }) { _, base in
                try await Live.expectStatus(base + Live.thumbnailPath(source: originBase + "/photo.jpg", "w=64"), 200)
                try await Live.expectStatus(base + Live.thumbnailPath(source: originBase + "/photo.jpg", "w=65"), 400)
            }
        }
    }
}
