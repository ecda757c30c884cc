import Foundation
import HTTPTypes
import ImageCore
import InMemoryTracing
import Testing
import Tracing

@testable import ImageService

/// The source policy judged on every answer, the gallery-oracle rule (nothing signs for a client), and what the
/// service reports: spans per stage, metrics by name.
@Suite struct PolicyAndObservabilityTests {
    /// How a failed miss ends a fleet's lease: results and sources are the manager's kept data loads, whose claim
    /// ends by the SDK's failure policy. An origin that is only busy (408, 429, 5xx) or slow leaves the fetch to one
    /// waiting replica (`abandoned`); a 429 marked "nothing to share" would send every waiting replica to the origin
    /// that had just asked for fewer requests. A 404 or 410 is `notStored`.
    @Test func aBusyOriginLeavesTheFetchToOneReplica() {
        for status in [408, 429, 500, 503] {
            #expect(!ImageLoaderPolicy.isPermanentFailure(.invalidDownloadStatusCode(status)), "\(status)")
        }
        for status in [404, 410] {
            #expect(ImageLoaderPolicy.isPermanentFailure(.invalidDownloadStatusCode(status)), "\(status)")
        }
        #expect(!ImageLoaderPolicy.isPermanentFailure(ImageError(.timedOut, stage: .download)))
    }

    /// Redirects that lead nowhere are the origin's fault, not a refusal: a loop, a 3xx without a usable `Location`,
    /// and more hops than allowed answer 502, as does a 206 with part of the image (none is cached: the fixed origin
    /// is asked again); a hop to a URL the source grammar refuses stays 403.
    @Test func originFaultsAreBadGateways() async throws {
        let png = try ServiceImages.png(width: 16, height: 16, colour: 30)
        let fixed = Locked(false)
        let fixture = try await ServiceFixture.start({ $0.maxRedirects = 2 }) { request in
            let path = request.path
            if path == "/image.png" || fixed.value {
                return .respond(headers: [("Content-Type", "image/png")], body: png)
            }
            switch path {
            case "/loop": return .respond(status: .found, headers: [("Location", "/loop")])
            case "/nowhere": return .respond(status: .found)
            case "/empty": return .respond(status: .movedPermanently, headers: [("Location", "")])
            case "/hop1": return .respond(status: .found, headers: [("Location", "/hop2")])
            case "/hop2": return .respond(status: .found, headers: [("Location", "/hop3")])
            case "/hop3": return .respond(status: .found, headers: [("Location", "/image.png")])
            case "/to-file": return .respond(status: .found, headers: [("Location", "file:///etc/passwd")])
            case "/part":
                return .respond(
                    status: .partialContent,
                    headers: [("Content-Type", "image/png"), ("Content-Range", "bytes 0-19/\(png.count)")],
                    body: Array(png.prefix(20)))
            default: return .respond(status: .notFound)
            }
        }
        defer { Task { await fixture.stop() } }
        for (path, status) in [
            ("/loop", HTTPResponse.Status.badGateway), ("/nowhere", .badGateway), ("/empty", .badGateway),
            ("/hop1", .badGateway), ("/part", .badGateway), ("/to-file", .forbidden),
        ] {
            let answer = await fixture.get(path, "w=8&format=png")
            #expect(answer.status == status, "\(path): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.headers[.cacheControl] == "no-store")
        }
        // Two redirects are allowed: /hop1 takes three, /hop2 two.
        #expect(await fixture.get("/hop2", "w=8&format=png").status == .ok)
        // Nothing was kept of the failures: once the origin is fixed, the same URLs render.
        fixed.withLock { $0 = true }
        for path in ["/loop", "/nowhere", "/hop1", "/part"] {
            #expect(await fixture.get(path, "w=8&format=png").status == .ok, "\(path)")
        }
    }

    /// A provenance passes only while every hop's host is allowed and every address is.
    @Test func provenanceIsJudgedHopByHop() throws {
        let hops = SourceProvenance(hops: [
            .init(scheme: "https", host: "images.example.com", port: 443, address: "93.184.216.34"),
            .init(scheme: "https", host: "cdn.example.net", port: 443, address: "151.101.1.1"),
        ])
        let both = SourcePolicy(
            allowlist: try HostAllowlist(["images.example.com", "*.example.net"]), addresses: AddressPolicy())
        #expect(both.refusal(for: hops) == nil)
        let first = SourcePolicy(allowlist: try HostAllowlist(["images.example.com"]), addresses: AddressPolicy())
        #expect(first.refusal(for: hops)?.contains("cdn.example.net") == true)
        let loopback = SourceProvenance(hops: [.init(scheme: "http", host: "a.test", port: 80, address: "127.0.0.1")])
        #expect(
            SourcePolicy(allowlist: try HostAllowlist([]), addresses: AddressPolicy()).refusal(for: loopback) != nil)
        let allowed = SourcePolicy(
            allowlist: try HostAllowlist([]), addresses: AddressPolicy(allowing: [AddressRange("127.0.0.0/8")!]))
        #expect(allowed.refusal(for: loopback) == nil)
        #expect(both.refusal(for: SourceProvenance(hops: [])) != nil)
    }

    /// A thumbnail and a source cached under one policy are refused under a narrower one, on every level.
    @Test func cachedAnswersAreJudgedByTheCurrentPolicy() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start { _ in
            .respond(headers: [("Content-Type", "image/png")], body: image)
        }
        defer { Task { await fixture.stop() } }
        #expect(await fixture.get("/a.png", "w=20").status == .ok)
        await fixture.service.shutdown()
        try await Task.sleep(for: .milliseconds(300))  // the disk writes are asynchronous
        // The same cache folder, the origin's address no longer allowed.
        var narrower = fixture.service.configuration
        narrower.allowedAddresses = []
        let service = try ImageService(configuration: narrower)
        defer { Task { await service.shutdown() } }
        let source = QueryString.encode("http://127.0.0.1:\(fixture.origin.port)/a.png")
        for query in ["w=20", "w=21"] {
            let answer = await service.respond(
                to: ImageServiceRequest(path: "/thumbnail", query: "url=\(source)&\(query)"))
            #expect(answer.status == .forbidden, "\(query): \(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(fixture.origin.requests(to: "/a.png").count == 1)
    }

    /// Nothing signs a URL a client chose: `sign` is the operator's, and a request's headers never reach it.
    @Test func signingIsTheOperatorsAlone() async throws {
        var configuration = ImageServiceConfiguration()
        configuration.signingKeys = ["00112233445566778899aabbccddeeff"]
        configuration.cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-\(UUID())")
        let service = try ImageService(configuration: configuration)
        defer { Task { await service.shutdown() } }
        let signed = try #require(service.sign(path: "/thumbnail", query: "url=http%3A%2F%2Fa.example%2F&w=10"))
        let query = String(signed.split(separator: "?", maxSplits: 1)[1])
        let verifier = try URLSigner(encodedKeys: configuration.signingKeys)
        #expect(throws: Never.self) { try verifier.verify(path: "/thumbnail", query: query) }
        let unsigned = await service.respond(
            to: ImageServiceRequest(
                path: "/thumbnail", query: "url=http%3A%2F%2Fa.example%2F&w=10",
                headers: [HTTPField.Name("Host")!: "attacker.example"]))
        #expect(unsigned.status == .forbidden)
        #expect(!String(decoding: unsigned.body, as: UTF8.self).contains("sig="))
        var keyless = configuration
        keyless.signingKeys = []
        keyless.allowUnsigned = true
        #expect(try ImageService(configuration: keyless).sign(path: "/thumbnail", query: "w=1") == nil)
    }

    /// A miss is one span per stage under the request's span, with the cache levels as attributes; a memory hit
    /// is a request span with no fetch or decode.
    @Test func spansPerStage() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start { _ in
            .respond(headers: [("Content-Type", "image/png")], body: image)
        }
        defer { Task { await fixture.stop() } }
        #expect(await fixture.get("/a.png").status == .ok)
        let spans = fixture.tracer.finishedSpans
        let names = Set(spans.map(\.operationName))
        for stage in ["image_service.request", "cache.lookup", "fetch", "decode", "transform", "encode", "store"] {
            #expect(names.contains(stage), "no \(stage) span: \(names.sorted())")
        }
        let request = try #require(spans.first { $0.operationName == "image_service.request" })
        #expect(request.kind == .server)
        #expect(
            spans.filter { $0.operationName != "image_service.request" }.allSatisfy { $0.traceID == request.traceID })
        let levels = spans.filter { $0.operationName == "cache.lookup" }.compactMap { span -> String? in
            if case .string(let level) = span.attributes.get("cache.level") { return level }
            return nil
        }
        #expect(levels.contains("miss"))
        fixture.tracer.clearFinishedSpans()
        #expect(await fixture.get("/a.png").status == .ok)
        let hit = Set(fixture.tracer.finishedSpans.map(\.operationName))
        #expect(hit == ["image_service.request"], "\(hit)")
    }

    /// The metrics carry the configured prefix, by status and format, by cache kind and level.
    @Test func metricsByName() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start { request in
            request.path == "/missing.png"
                ? .respond(status: .notFound) : .respond(headers: [("Content-Type", "image/png")], body: image)
        }
        defer { Task { await fixture.stop() } }
        _ = await fixture.get("/a.png", "w=20&format=png")
        _ = await fixture.get("/a.png", "w=20&format=png")
        _ = await fixture.get("/missing.png")
        #expect(fixture.counter("requests_total", [("status", "200"), ("format", "png")]) == 2)
        #expect(fixture.counter("requests_total", [("status", "404"), ("format", "none")]) == 1)
        #expect(fixture.counter("cache_hits_total", [("kind", "result"), ("level", "memory")]) == 1)
        #expect(fixture.counter("origin_requests_total") == 2)
        #expect(fixture.count("decode") == 1 && fixture.count("encode") == 1 && fixture.count("origin") == 2)
    }
}
