import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import NIOHTTP1
import Testing

/// Redirects the loader follows itself, hop by hop, between two origins (two servers on different ports).
@Suite struct HTTPLoaderRedirectTests {
    static let image = pngLikeBytes(count: 1500)

    /// Runs `body` with an "allowed" server, an "other" server and a loader configured by `configure`.
    private func withTwoOrigins(
        loader configure: @escaping (inout HTTPLoaderConfiguration, _ allowedPort: Int) -> Void,
        allowed: @escaping @Sendable (RecordedRequest, _ otherPort: Int) -> ServerAction,
        _ body: (TestHTTPServer, TestHTTPServer, HTTPLoader) async throws -> Void
    ) async throws {
        let image = Self.image
        let other = try await TestHTTPServer.start { _ in
            .respond(headers: [("Content-Type", "image/png")], body: image)
        }
        let otherPort = other.port
        let allowedServer = try await TestHTTPServer.start { allowed($0, otherPort) }
        let loader = makeLoader { configure(&$0, allowedServer.port) }
        do {
            try await body(allowedServer, other, loader)
        } catch {
            try? await loader.shutdown()
            await allowedServer.stop()
            await other.stop()
            throw error
        }
        try await loader.shutdown()
        await allowedServer.stop()
        await other.stop()
    }

    @Test func theFilterRefusesAHopToAnotherHostBeforeItIsSent() async throws {
        let hops = Locked<[String]>([])
        try await withTwoOrigins(
            loader: { configuration, allowedPort in
                configuration.redirectFilter = { from, to in
                    hops.withLock { $0.append("\(from.port ?? 0)\(from.path) → \(to.port ?? 0)\(to.path)") }
                    return to.host == "127.0.0.1" && to.port == allowedPort
                }
            },
            allowed: { request, otherPort in
                switch request.path {
                case "/same": .respond(status: .found, headers: [("Location", "/final.png")])
                case "/away": .respond(status: .found, headers: [("Location", "http://127.0.0.1:\(otherPort)/x.png")])
                default: .respond(headers: [("Content-Type", "image/png")], body: Self.image)
                }
            }
        ) { allowed, other, loader in
            let loaded = try #require(try await load(loader, allowed.url("/same"))?.get())
            #expect(loaded.data == Data(Self.image))
            #expect(loaded.response.url == allowed.url("/final.png"))

            let error = try #require(await load(loader, allowed.url("/away"))?.error)
            #expect(error.code == .redirectRefused)
            #expect(error.stage == .download)
            #expect(!loader.shouldBlockFailedURL(allowed.url("/away"), error: error))
            #expect(other.stats.value.requests.isEmpty, "the refused target was contacted")
            #expect(
                hops.value == [
                    "\(allowed.port)/same → \(allowed.port)/final.png", "\(allowed.port)/away → \(other.port)/x.png",
                ])
        }
    }

    @Test func credentialsStayWithTheirOriginAndCookiesFollowTheJar() async throws {
        try await withTwoOrigins(
            loader: { configuration, _ in configuration.credentials = (user: "u", password: "p") },
            allowed: { request, otherPort in
                switch request.path {
                case "/login":
                    .respond(
                        status: .found, headers: [("Set-Cookie", "sid=s1; Path=/"), ("Location", "/inside")])
                case "/inside":
                    // Another host name (cookies do not tell ports apart, origins do).
                    .respond(status: .seeOther, headers: [("Location", "http://localhost:\(otherPort)/elsewhere")])
                default: .respond(body: Self.image)
                }
            }
        ) { allowed, other, loader in
            _ = try #require(try await load(loader, allowed.url("/login"), options: .handleCookies)?.get())
            // The same-origin hop keeps Authorization and carries the cookie the redirect just set.
            let inside = try #require(allowed.requests(to: "/inside").first)
            #expect(inside.header("Authorization") != nil)
            #expect(inside.header("Cookie") == "sid=s1")
            // The hop to another origin (another port) carries neither.
            let elsewhere = try #require(other.requests(to: "/elsewhere").first)
            #expect(elsewhere.header("Authorization") == nil)
            #expect(elsewhere.header("Cookie") == nil)
            #expect(elsewhere.method == "GET")
        }
    }

    @Test func aRedirectBodyIsDrainedAndTheConnectionReused() async throws {
        let filler = [UInt8](repeating: 0x20, count: 50_000)
        try await withServer(script: { request in
            request.path == "/moved"
                ? .respond(status: .movedPermanently, headers: [("Location", "/here.png")], body: filler)
                : .respond(headers: [("Content-Type", "image/png")], body: Self.image)
        }) { server, loader in
            let loaded = try #require(try await load(loader, server.url("/moved"))?.get())
            #expect(loaded.data == Data(Self.image))
            #expect(server.stats.value.connectionsOpened == 1)
            #expect(server.stats.value.requests.map(\.path) == ["/moved", "/here.png"])
        }
    }

    @Test func withFollowingOffARedirectIsAStatusError() async throws {
        try await withServer(
            loader: { $0.maximumRedirects = 0 },
            script: { _ in .respond(status: .found, headers: [("Location", "/x.png")]) }
        ) { server, loader in
            let error = try #require(await load(loader, server.url("/r"))?.error)
            #expect(error.code == .invalidDownloadStatusCode)
            #expect(error.statusCode == 302)
            #expect(server.stats.value.requests.count == 1)
        }
    }
}
