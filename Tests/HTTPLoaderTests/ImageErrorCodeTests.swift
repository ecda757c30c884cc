import DiskCache
import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import ImageTestSupport
import NIOHTTP1
import PNGCoder
import Testing

/// Every public `ImageError.Code` of ImageCore and of the plugins this suite links (HTTPLoader, PNGCoder,
/// DiskCache), raised through the public API by a case its documentation names, with the stage it documents.
///
/// The codes are read from the sources (`public static let x = Code("x")`), so a code added without a trigger
/// here fails the test: its documentation then needs a case, and this table a load that raises it. It lives in
/// HTTPLoader's suite because most codes need a real server; DiskCache is linked for `cacheFailure`.
@Suite struct ImageErrorCodeTests {
    /// The folders whose codes this suite can reach.
    static let scanned = ["Sources/ImageCore", "Plugins/HTTPLoader", "Plugins/PNGCoder", "Plugins/DiskCache"]

    /// The public codes declared in `scanned`, by name.
    static func declaredCodes() throws -> Set<String> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let declaration = try Regex(#"public\s+static\s+let\s+(\w+)\s*=\s*(?:ImageError\.)?Code\(\s*"(\w+)"\s*\)"#)
        var names: Set<String> = []
        for folder in scanned {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
            while let file = files?.nextObject() as? URL {
                guard file.pathExtension == "swift" else { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in text.matches(of: declaration) {
                    let property = String(match.output[1].substring ?? "")
                    let name = String(match.output[2].substring ?? "")
                    #expect(property == name, "\(file.lastPathComponent): Code \(property) is named \"\(name)\"")
                    names.insert(name)
                }
            }
        }
        return names
    }

    /// What the origin answers per path.
    static func script(_ request: RecordedRequest) -> ServerAction {
        let png: [(String, String)] = [("Content-Type", "image/png")]
        switch request.path {
        case "/ok.png":
            return .respond(headers: png, body: [UInt8](Fixture.png))
        case "/corrupt.png":
            return .respond(headers: png, body: Fixture.corruptPNG)
        case "/huge.png":
            return .respond(headers: png, body: [UInt8](PNGFixtures.headerOnly(width: 60_000, height: 60_000)))
        case "/page.html":
            return .respond(headers: [("Content-Type", "text/html")], body: Array("<html>Not found</html>".utf8))
        case "/text.png":
            return .respond(headers: [("Content-Type", "text/plain")], body: Array("plain".utf8))
        case "/etag.png" where request.header("If-None-Match") == "\"v1\"":
            return .respond(status: .notModified, headers: [("ETag", "\"v1\"")])
        case "/loop.png":
            return .respond(status: .found, headers: [("Location", "/loop.png")])
        case "/away.png":
            return .respond(status: .found, headers: [("Location", "/forbidden.png")])
        case "/big.png":
            return .respond(headers: png, body: [UInt8](repeating: 7, count: 200_000))
        case "/truncated.png":
            return .truncated(declaredLength: 1_000, body: [UInt8](Fixture.png.prefix(40)))
        case "/stall.png":
            return .stall
        default:
            return .respond(status: .notFound)
        }
    }

    /// A server, a loader with the limits the triggers need, and a manager over them.
    struct Fixture: Sendable {
        static let png = PNGFixtures.make(
            width: 4, height: 3, bitDepth: 8, colorType: .rgb, samples: [UInt16](repeating: 90, count: 36))
        /// The PNG with one byte of its image data flipped: a PNG by its header, its IDAT's checksum wrong.
        static let corruptPNG: [UInt8] = {
            var bytes = [UInt8](png)
            let idat = bytes.indices.first { Array(bytes[$0..<min($0 + 4, bytes.count)]) == Array("IDAT".utf8) }!
            bytes[idat + 6] ^= 0xFF
            return bytes
        }()
        let server: TestHTTPServer
        let loader: HTTPLoader
        let manager: ImageManager

        func url(_ path: String) -> URL { server.url(path) }

        /// The error `load` throws, nil when it succeeds.
        func error(_ load: () async throws -> ImageResult) async -> ImageError? {
            do {
                _ = try await load()
                return nil
            } catch {
                return error as? ImageError
            }
        }

        func load(_ path: String, options: ImageOptions = [], context: ImageContext? = nil) async -> ImageError? {
            await error { try await manager.loadImage(with: url(path), options: options, context: context) }
        }
    }

    struct Failing: Error {}

    /// One trigger per code: the stage the documentation names, and a load that raises the code.
    static let triggers: [String: (stage: ImageError.Stage?, raise: @Sendable (Fixture) async throws -> ImageError?)] =
        [
            "invalidURL": (
                .request, { fixture in await fixture.error { try await fixture.manager.loadImage(with: nil) } }
            ),
            "blockedURL": (
                .request,
                { fixture in
                    // A 404 puts the URL on the failed-URL list; the next load fails without a request.
                    let first = await fixture.load("/gone.png")
                    #expect(first?.code == .invalidDownloadStatusCode)
                    let second = await fixture.load("/gone.png")
                    #expect(fixture.server.requests(to: "/gone.png").count == 1)
                    return second
                }
            ),
            "badImageData": (.decode, { await $0.load("/corrupt.png") }),
            "imageTooLarge": (.decode, { await $0.load("/huge.png") }),
            "cacheNotModified": (
                .download,
                { fixture in
                    // A revalidation sent to the loader itself; through the manager it ends with the cached image.
                    var context = ImageContext()
                    context.loaderCachedMetadata = CacheEntryMetadata(etag: "\"v1\"")
                    let result = await load(
                        fixture.loader, fixture.url("/etag.png"), options: .refreshCached, context: context)
                    #expect(result?.error?.statusCode == 304)
                    return result?.error
                }
            ),
            "cancelled": (
                nil,
                { fixture in
                    let result = Locked<Result<ImageResult, ImageError>?>(nil)
                    let operation = fixture.manager.loadImage(with: fixture.url("/stall.png")) { outcome in
                        if case .success(let value) = outcome, !value.isFinal { return }
                        result.withLock { $0 = outcome }
                    }
                    operation.cancel()
                    #expect(await waitUntil { result.value != nil })
                    return result.value?.error
                }
            ),
            "invalidDownloadStatusCode": (
                .download,
                { fixture in
                    let error = await fixture.load("/missing.png")
                    #expect(error?.statusCode == 404)
                    return error
                }
            ),
            "invalidDownloadContentType": (.download, { await $0.load("/text.png") }),
            "invalidDownloadResponse": (.download, { await $0.load("/loop.png") }),
            "redirectRefused": (.download, { await $0.load("/away.png") }),
            "downloadTooLarge": (.download, { await $0.load("/big.png") }),
            "downloadFailed": (.download, { await $0.load("/truncated.png") }),
            "timedOut": (
                .download,
                { fixture in
                    var context = ImageContext()
                    context.httpTransferTimeout = 0.3
                    return await fixture.load("/stall.png", context: context)
                }
            ),
            "noCoder": (.decode, { await $0.load("/page.html") }),
            "noLoader": (
                .download,
                { fixture in
                    // Only the built-in data: loader: nobody loads http.
                    let manager = ImageManager(cache: RecordingCache(), loader: LoadersManager())
                    return await fixture.error { try await manager.loadImage(with: fixture.url("/ok.png")) }
                }
            ),
            "cacheFailure": (
                .cacheStore,
                { _ in
                    let directory = CacheFixtures.temporaryDirectory("error-codes")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    let cache = DiskCache(configuration: DiskCacheConfiguration(directory: directory, maxEntrySize: 64))
                    let result = Locked<Result<Void, ImageError>?>(nil)
                    cache.store(
                        nil, data: Data(count: 1_000), metadata: nil, forKey: "entry", cacheType: .disk,
                        completion: { outcome in result.withLock { $0 = outcome } })
                    #expect(await waitUntil { result.value != nil })
                    if case .failure(let error) = result.value { return error }
                    return nil
                }
            ),
            "transformFailed": (
                .transform,
                { fixture in
                    var context = ImageContext()
                    context.imageTransformer = BlockTransformer(key: "failing") { _, _ in throw Failing() }
                    return await fixture.load("/ok.png", context: context)
                }
            ),
            "encodeFailed": (
                .encode,
                { _ in
                    let empty = Image(pixels: PixelBuffer(width: 0, height: 0, layout: .rgb8, bytes: []))
                    do {
                        _ = try CodersManager(coders: [PNGCoder.shared]).encode(
                            empty, as: .png, options: ImageEncodeOptions())
                        return nil
                    } catch {
                        return error as? ImageError
                    }
                }
            ),
            "cacheMiss": (.cacheQuery, { await $0.load("/never-cached.png", options: .fromCacheOnly) }),
            // An encoder's perceptual search with no metric registered (this suite links no JXLCoder, so nothing
            // registers one): refused before any encode.
            "noPerceptualMetric": (
                .encode,
                { _ in
                    guard PerceptualQuality.metric == nil else { return nil }
                    let pixels = PixelBuffer(width: 1, height: 1, layout: .rgb8, bytes: [0, 0, 0])
                    let encodes = Locked(0)
                    do {
                        _ = try PerceptualQuality.search(
                            PerceptualTarget(maxDistance: 1), reference: pixels, levels: 1...100, start: 80,
                            logSlope: -0.02, quality: { Double($0) / 100 },
                            encode: { _ in
                                encodes.withLock { $0 += 1 }
                                return Data()
                            },
                            decode: { _ in pixels })
                        return nil
                    } catch {
                        return encodes.value == 0 ? error as? ImageError : nil
                    }
                }
            ),
        ]

    @Test func everyDeclaredCodeIsRaisedByACaseItsDocumentationNames() async throws {
        let declared = try Self.declaredCodes()
        // The scan reads the sources: a moved file must not make the test pass on nothing.
        #expect(declared.isSuperset(of: ["invalidURL", "badImageData", "noCoder", "cacheMiss", "redirectRefused"]))
        for code in declared.subtracting(Self.triggers.keys).sorted() {
            Issue.record("ImageError.Code.\(code) has no trigger: document the cases that raise it and add one here")
        }
        for code in Set(Self.triggers.keys).subtracting(declared).sorted() {
            Issue.record("a trigger for \(code), which no scanned source declares")
        }

        let server = try await TestHTTPServer.start(script: Self.script)
        let loader = makeLoader { configuration in
            configuration.acceptableContentTypes = ["image/png", "text/html"]
            configuration.maximumResponseSize = 100_000
            configuration.redirectFilter = { _, to in to.path != "/forbidden.png" }
        }
        let manager = ImageManager(
            cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [PNGCoder.shared]))
        let fixture = Fixture(server: server, loader: loader, manager: manager)
        for (code, trigger) in Self.triggers.sorted(by: { $0.key < $1.key }) where declared.contains(code) {
            let error = try await trigger.raise(fixture)
            #expect(error?.code == ImageError.Code(code), "\(code): got \(error.map { "\($0)" } ?? "no error")")
            if let stage = trigger.stage {
                #expect(error?.stage == stage, "\(code): stage \(error.map { "\($0.stage)" } ?? "-")")
            }
        }
        // The second case `timedOut` documents: the load's own deadline, at stage `request`, through the real loader
        // (its transfer timeout, 15 s, far away).
        var hurried = ImageContext()
        hurried.loadTimeout = 0.3
        let started = ContinuousClock.now
        let late = await fixture.load("/stall.png", context: hurried)
        #expect(
            late?.code == .timedOut && late?.stage == .request, "loadTimeout: got \(late.map { "\($0)" } ?? "no error")"
        )
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(server.requests(to: "/never-cached.png").isEmpty, ".fromCacheOnly never downloads")
        try await loader.shutdown()
        await server.stop()
    }
}
