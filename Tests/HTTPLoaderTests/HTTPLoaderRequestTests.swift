import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import Testing

/// What goes out on the wire and the per-request hooks: headers, credentials, cookies, modifiers, decryptor.
@Suite struct HTTPLoaderRequestTests {
    static let body = pngLikeBytes(count: 300)

    @Test func defaultHeadersCredentialsAndSetters() async throws {
        let body = Self.body
        try await withServer(
            loader: {
                $0.credentials = (user: "alice", password: "s3cret")
                $0.headers = [(name: "X-Team", value: "images")]
                $0.acceptedFormats = [.png]
            },
            script: { _ in .respond(body: body) }
        ) { server, loader in
            loader.setValue("42", forHTTPHeaderField: "X-Tenant")
            loader.setValue(nil, forHTTPHeaderField: "x-team")
            #expect(loader.value(forHTTPHeaderField: "x-tenant") == "42")
            #expect(loader.value(forHTTPHeaderField: "X-Team") == nil)
            _ = try #require(try await load(loader, server.url("/h.png"))?.get())
            let request = try #require(server.requests(to: "/h.png").first)
            #expect(request.header("Authorization") == "Basic " + Data("alice:s3cret".utf8).base64EncodedString())
            #expect(request.header("X-Tenant") == "42")
            #expect(request.header("X-Team") == nil)
            #expect(request.header("Accept") == "image/png,image/*;q=0.8")
        }
    }

    @Test func requestModifiersRewriteAndNilCancels() async throws {
        let body = Self.body
        try await withServer(
            loader: {
                $0.requestModifier = BlockRequestModifier { request in
                    var request = request
                    request[header: "X-Global"] = "g"
                    return request
                }
            },
            script: { _ in .respond(body: body) }
        ) { server, loader in
            var context = ImageContext()
            context.downloadRequestModifier = BlockRequestModifier { request in
                var request = request
                request[header: "X-Local"] = request[header: "X-Global"].map { $0 + "+l" }
                request.url = URL(
                    string: request.url.absoluteString.replacingOccurrences(of: "/orig", with: "/rewritten"))!
                return request
            }
            _ = try #require(try await load(loader, server.url("/orig.png"), context: context)?.get())
            let request = try #require(server.requests(to: "/rewritten.png").first)
            #expect(request.header("X-Global") == "g")
            #expect(request.header("X-Local") == "g+l")

            var refusing = ImageContext()
            refusing.downloadRequestModifier = BlockRequestModifier { _ in nil }
            let error = try #require(await load(loader, server.url("/refused.png"), context: refusing)?.error)
            #expect(error.code == .cancelled)
            #expect(server.requests(to: "/refused.png").isEmpty)
        }
    }

    @Test func responseModifiersVetAndNilFails() async throws {
        let body = Self.body
        try await withServer(
            loader: {
                $0.responseModifier = BlockResponseModifier { response in
                    response.headers["x-reject"] == "1" ? nil : response
                }
            },
            script: { request in
                .respond(
                    headers: [("Content-Type", "image/png"), ("X-Reject", request.path == "/bad" ? "1" : "0")],
                    body: body)
            }
        ) { server, loader in
            let global = try #require(await load(loader, server.url("/bad"))?.error)
            #expect(global.code == .invalidDownloadResponse)

            var context = ImageContext()
            context.downloadResponseModifier = BlockResponseModifier { response in
                var response = response
                response.contentType = "image/x-renamed"
                return response
            }
            let renamed = try #require(try await load(loader, server.url("/good"), context: context)?.get())
            #expect(renamed.response.contentType == "image/x-renamed")

            context.downloadResponseModifier = BlockResponseModifier { _ in nil }
            let refused = try #require(await load(loader, server.url("/good"), context: context)?.error)
            #expect(refused.code == .invalidDownloadResponse)
        }
    }

    @Test func statusAndContentTypeAreCheckedAfterTheResponseModifiers() async throws {
        let body = Self.body
        try await withServer(
            loader: { $0.acceptableContentTypes = ["image/*"] },
            script: { _ in .hold("go", then: .respond(headers: [("Content-Type", "image/png")], body: body)) }
        ) { server, loader in
            var notFound = ImageContext()
            notFound.downloadResponseModifier = BlockResponseModifier { response in
                var response = response
                response.statusCode = 404
                return response
            }
            var html = ImageContext()
            html.downloadResponseModifier = BlockResponseModifier { response in
                var response = response
                response.contentType = "text/html"
                return response
            }
            let missing = startLoad(loader, server.url("/m.png"), context: notFound).recorder
            let page = startLoad(loader, server.url("/m.png"), context: html).recorder
            let plain = startLoad(loader, server.url("/m.png")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            let error = try #require(await missing.result()?.error)
            #expect(error.code == .invalidDownloadStatusCode)
            #expect(error.statusCode == 404)
            #expect(loader.shouldBlockFailedURL(server.url("/m.png"), error: error))
            #expect(await page.result()?.error?.code == .invalidDownloadContentType)
            #expect(await plain.result()?.value?.data == Data(body))
            #expect(server.requests(to: "/m.png").count == 1)
        }
    }

    @Test func aConfigurationModifierThatFailsTheStatusFailsEveryLoad() async throws {
        try await withServer(
            loader: {
                $0.responseModifier = BlockResponseModifier { response in
                    var response = response
                    if response.headers["x-soft-404"] != nil { response.statusCode = 404 }
                    return response
                }
            },
            script: { _ in .respond(headers: [("X-Soft-404", "1")], body: Self.body) }
        ) { server, loader in
            let error = try #require(await load(loader, server.url("/soft"))?.error)
            #expect(error.statusCode == 404)
        }
    }

    @Test func aModifierCanAlsoRescueAStatus() async throws {
        try await withServer(script: { _ in .respond(status: .notFound, body: Self.body) }) { server, loader in
            var context = ImageContext()
            context.downloadResponseModifier = BlockResponseModifier { response in
                var response = response
                response.statusCode = 200
                return response
            }
            #expect(await load(loader, server.url("/custom-404.png"), context: context)?.value?.data == Data(Self.body))
            #expect(await load(loader, server.url("/custom-404.png"))?.error?.statusCode == 404)
        }
    }

    @Test func credentialedRequestsAreReportedToTheManager() async throws {
        let url = URL(string: "https://img.example.com/a.png")!
        let plain = makeLoader()
        #expect(!plain.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        #expect(!plain.requestCarriesCredentials(for: url, options: .handleCookies, context: ImageContext()))
        var modified = ImageContext()
        modified.downloadRequestModifier = BlockRequestModifier { $0 }
        #expect(plain.requestCarriesCredentials(for: url, options: [], context: modified))
        for header in ["Authorization", "cookie", "Proxy-Authorization"] {
            plain.setValue("secret", forHTTPHeaderField: header)
            #expect(plain.requestCarriesCredentials(for: url, options: [], context: ImageContext()), "\(header)")
            plain.setValue(nil, forHTTPHeaderField: header)
        }
        #expect(!plain.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        plain.cookieJar.store(setCookieHeaders: ["sid=1"], from: url)
        #expect(plain.requestCarriesCredentials(for: url, options: .handleCookies, context: ImageContext()))
        #expect(!plain.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        #expect(
            !plain.requestCarriesCredentials(
                for: URL(string: "https://other.example.org/")!, options: .handleCookies, context: ImageContext()))
        try await plain.shutdown()

        let basic = makeLoader { $0.credentials = (user: "u", password: "p") }
        #expect(basic.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        try await basic.shutdown()
        let header = makeLoader { $0.headers = [(name: "Authorization", value: "Bearer x")] }
        #expect(header.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        try await header.shutdown()
        let global = makeLoader { $0.requestModifier = BlockRequestModifier { $0 } }
        #expect(global.requestCarriesCredentials(for: url, options: [], context: ImageContext()))
        try await global.shutdown()
    }

    @Test func differentCredentialsNeverShareATransfer() async throws {
        let body = Self.body
        try await withServer(script: { _ in .hold("go", then: .respond(body: body)) }) { server, loader in
            loader.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
            let alice = startLoad(loader, server.url("/me.png")).recorder
            let aliceAgain = startLoad(loader, server.url("/me.png")).recorder
            loader.setValue("Bearer bob", forHTTPHeaderField: "Authorization")
            let bob = startLoad(loader, server.url("/me.png")).recorder
            // A caller's own request modifier makes its transfer private, even when it changes nothing.
            var own = ImageContext()
            own.downloadRequestModifier = BlockRequestModifier { $0 }
            let mine = startLoad(loader, server.url("/me.png"), context: own).recorder
            #expect(await server.waitUntil { $0.requests.count == 3 })
            server.open("go")
            for recorder in [alice, aliceAgain, bob, mine] { #expect(await recorder.result()?.value != nil) }
            let sent = server.requests(to: "/me.png").compactMap { $0.header("Authorization") }.sorted()
            #expect(sent == ["Bearer alice", "Bearer bob", "Bearer bob"])
        }
    }

    @Test func cookiesAreNeitherStoredNorSentWithoutHandleCookies() async throws {
        try await withServer(script: { _ in .respond(headers: [("Set-Cookie", "sid=1")], body: Self.body) }) {
            server, loader in
            _ = try #require(try await load(loader, server.url("/a.png"))?.get())
            #expect(loader.cookieJar.count == 0)
            _ = try #require(try await load(loader, server.url("/b.png"), options: .handleCookies)?.get())
            #expect(loader.cookieJar.count == 1)
            _ = try #require(try await load(loader, server.url("/c.png"))?.get())
            #expect(server.requests(to: "/c.png").first?.header("Cookie") == nil)
        }
    }

    @Test func decryptorTransformsTheBytesPerCaller() async throws {
        let body = Self.body
        let key: UInt8 = 0x5A
        try await withServer(script: { _ in .hold("go", then: .respond(body: body.map { $0 ^ key })) }) {
            server, loader in
            var context = ImageContext()
            context.downloadDecryptor = BlockDownloadDecryptor { data, _ in Data(data.map { $0 ^ key }) }
            let decrypted = startLoad(loader, server.url("/enc"), context: context).recorder
            let raw = startLoad(loader, server.url("/enc")).recorder
            var failing = ImageContext()
            failing.downloadDecryptor = BlockDownloadDecryptor { _, _ in nil }
            let refused = startLoad(loader, server.url("/enc"), context: failing).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            let encrypted = Data(body.map { $0 ^ key })
            #expect(await decrypted.result()?.value?.data == Data(body))
            #expect(await raw.result()?.value?.data == encrypted)
            #expect(await refused.result()?.error?.code == .badImageData)
            #expect(server.requests(to: "/enc").count == 1)  // the decryptor does not split the transfer
        }
    }

    @Test func cookiesAreStoredAndSentOnlyWithHandleCookies() async throws {
        let body = Self.body
        try await withServer(script: { request in
            switch request.path {
            case "/login":
                .respond(status: .found, headers: [("Set-Cookie", "sid=xyz; Path=/"), ("Location", "/landing")])
            case "/landing": .respond(headers: [("Set-Cookie", "seen=1; Max-Age=3600")], body: body)
            default: .respond(body: body)
            }
        }) { server, loader in
            _ = try #require(try await load(loader, server.url("/login"), options: .handleCookies)?.get())
            #expect(loader.cookieJar.count == 2)  // including the one set on the redirect
            _ = try #require(try await load(loader, server.url("/img.png"), options: .handleCookies)?.get())
            _ = try #require(try await load(loader, server.url("/plain.png"))?.get())
            let cookie = try #require(server.requests(to: "/img.png").first?.header("Cookie"))
            #expect(Set(cookie.components(separatedBy: "; ")) == ["seen=1", "sid=xyz"])
            #expect(server.requests(to: "/plain.png").first?.header("Cookie") == nil)
        }
    }

    @Test func shutdownCancelsEverythingAndRefusesNewLoads() async throws {
        let server = try await TestHTTPServer.start { _ in .stall }
        let loader = makeLoader { $0.maxConcurrentDownloads = 1 }
        let running = startLoad(loader, server.url("/running")).recorder
        let queued = startLoad(loader, server.url("/queued")).recorder
        #expect(await server.waitUntil { $0.requests.count == 1 })
        try await loader.shutdown()
        #expect(await running.result(within: 2)?.error?.code == .cancelled)
        #expect(await queued.result(within: 2)?.error?.code == .cancelled)
        #expect(await load(loader, server.url("/after"), within: 2)?.error?.code == .cancelled)
        #expect(await server.waitUntil { $0.connectionsClosed == 1 })
        await server.stop()
    }
}
