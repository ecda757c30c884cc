import Foundation
import HTTPTypes
import ImageCore
import ImageTransformers
import JPEGCoder
import JXLCoder
import PNGCoder
import Testing

@testable import ImageService

/// `q=auto` (the lowest quality within the server's butteraugli distance, capped at its fixed quality) and
/// `format=blurhash|thumbhash` (the placeholder string of the thumbnail), each cached as its own result.
@Suite struct PerceptualAndPlaceholderTests {
    /// A photo-like source: gradients with a fine texture, so quality changes what butteraugli sees.
    static func texturedPNG(width: Int = 240, height: Int = 180) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 3)
        var noise: UInt32 = 12_345
        for y in 0..<height {
            for x in 0..<width {
                noise = noise &* 1_103_515_245 &+ 12_345
                let grain = Int((noise >> 16) & 31) - 16
                let r = (x * 255 / width + grain).clamped(to: 0...255)
                let g = (y * 255 / height + grain / 2).clamped(to: 0...255)
                let b = ((x ^ y) & 0xFF).clamped(to: 0...255)
                bytes += [UInt8(r), UInt8(g), UInt8(b)]
            }
        }
        let image = Image(pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes))
        return Array(try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions()))
    }

    static func start(jpegDistance: Double? = nil) async throws -> ServiceFixture {
        let source = try texturedPNG()
        return try await ServiceFixture.start({
            if let jpegDistance { $0.perceptualDistance[.jpeg] = jpegDistance }
        }) { _ in
            .respond(headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: source)
        }
    }

    @Test func theParserReadsAutoQualityAndPlaceholders() throws {
        let parser = OptionsParser()
        let auto = try parser.parse(QueryString.pairs("url=https%3A%2F%2Fa.example%2Fp.jpg&w=100&q=auto"))
        #expect(auto.autoQuality && auto.quality == nil)
        #expect(auto.canonicalDescription.contains("q=auto"))
        let fixed = try parser.parse(QueryString.pairs("url=https%3A%2F%2Fa.example%2Fp.jpg&w=100&q=80"))
        #expect(!fixed.autoQuality && fixed.canonicalDescription != auto.canonicalDescription)
        for bad in ["automatic", "AUTO", "0", "auto1"] {
            #expect(throws: OptionsParser.Invalid.self) {
                try parser.parse(QueryString.pairs("url=https%3A%2F%2Fa.example%2Fp.jpg&w=100&q=\(bad)"))
            }
        }
        let blur = try parser.parse(QueryString.pairs("url=https%3A%2F%2Fa.example%2Fp.jpg&w=100&format=blurhash"))
        #expect(blur.format == .placeholder(.blurhash))
        #expect(blur.format.encoding(accept: "image/avif", canEncodeAVIF: true) == .placeholder(.blurhash))
        #expect(!blur.format.variesByAccept)
    }

    /// The chosen quality meets the target, checked with the same metric on the answer's pixels against the
    /// thumbnail's exact pixels (the PNG answer of the same request), with fewer bytes than the fixed quality (q 80
    /// reaches about 3.3 on this source, so a target of 5 leaves room below it); its own cache entry and ETag; a
    /// second request is a cache hit, not a second search.
    @Test func autoQualityMeetsTheTargetWithFewerBytes() async throws {
        let fixture = try await Self.start(jpegDistance: 5)
        defer { Task { await fixture.stop() } }
        let exact = await fixture.get("/photo.png", "w=160&format=png")
        let fixed = await fixture.get("/photo.png", "w=160&format=jpeg&q=80")
        let auto = await fixture.get("/photo.png", "w=160&format=jpeg&q=auto")
        #expect(exact.status == .ok && fixed.status == .ok && auto.status == .ok)
        #expect(auto.headers[.contentType] == "image/jpeg")
        let tags = [exact, fixed, auto].map { $0.headers[.eTag] }
        #expect(Set(tags).count == 3, "q=auto is a result of its own: \(tags)")

        let reference = try PNGCoder.shared.decode(exact.body, options: ImageDecodeOptions())
        let chosen = try JPEGCoder.shared.decode(auto.body, options: ImageDecodeOptions())
        let measured = try PerceptualQuality.distance(
            from: reference.pixels, to: chosen.pixels, with: ButteraugliMetric.shared)
        #expect(measured <= 5, "distance \(measured) over the target")
        #expect(auto.body.count < fixed.body.count, "q=auto \(auto.body.count) B, q=80 \(fixed.body.count) B")
        print("q=auto: \(auto.body.count) B at distance \(measured) (target 5); q=80: \(fixed.body.count) B")

        let encodes = fixture.count("encode")
        let again = await fixture.get("/photo.png", "w=160&format=jpeg&q=auto")
        #expect(again.body == auto.body && again.headers[.eTag] == auto.headers[.eTag])
        #expect(fixture.count("encode") == encodes, "served from the result cache")
    }

    /// A target the capped search can't reach ends at the cap: the fixed quality's bytes, never more.
    @Test func anUnreachableTargetEndsAtTheFixedQuality() async throws {
        let fixture = try await Self.start(jpegDistance: 0.3)
        defer { Task { await fixture.stop() } }
        let fixed = await fixture.get("/photo.png", "w=160&format=jpeg&q=80")
        let auto = await fixture.get("/photo.png", "w=160&format=jpeg&q=auto")
        #expect(auto.status == .ok && auto.body == fixed.body)
    }

    /// A format without a configured distance encodes `q=auto` at its fixed quality: the same bytes as no `q`.
    @Test func autoQualityWithoutADistanceIsTheFixedQuality() async throws {
        let source = try Self.texturedPNG()
        let fixture = try await ServiceFixture.start({ $0.perceptualDistance = [:] }) { _ in
            .respond(headers: [("Content-Type", "image/png")], body: source)
        }
        defer { Task { await fixture.stop() } }
        let auto = await fixture.get("/photo.png", "w=120&format=jpeg&q=auto")
        let plain = await fixture.get("/photo.png", "w=120&format=jpeg")
        #expect(auto.status == .ok && auto.body == plain.body)
    }

    /// `effort` reaches the encoder of the format it names and no other: AVIF's default (`.balanced`) and `.fast`
    /// give different bytes, an explicit `.balanced` the default's; JPEG's answer is the same whatever AVIF's effort.
    @Test func theConfiguredEffortReachesTheEncoderOfItsFormatOnly() async throws {
        let source = try Self.texturedPNG()
        var answers: [(avif: [UInt8], jpeg: [UInt8])] = []
        for effort in [nil, EncodeEffort.balanced, .fast] {
            let fixture = try await ServiceFixture.start({ if let effort { $0.effort[.avif] = effort } }) { _ in
                .respond(headers: [("Content-Type", "image/png")], body: source)
            }
            let avif = await fixture.get("/photo.png", "w=120&format=avif")
            let jpeg = await fixture.get("/photo.png", "w=120&format=jpeg")
            await fixture.stop()
            #expect(avif.status == .ok && avif.headers[.contentType] == "image/avif" && jpeg.status == .ok)
            answers.append((Array(avif.body), Array(jpeg.body)))
        }
        #expect(answers[0].avif == answers[1].avif, "the default is .balanced")
        #expect(answers[0].avif != answers[2].avif, ".fast is a different encode")
        #expect(Set(answers.map(\.jpeg)).count == 1, "AVIF's effort leaves JPEG alone")
    }

    /// The server's output settings are part of every result's identity (its key and ETag): a service over the same
    /// disk cache with another AVIF effort renders anew under a new ETag, and a client holding the old ETag gets
    /// the new bytes, not a 304; with the first service's settings again, the stored result is served (no decode)
    /// under the first ETag.
    @Test func outputSettingsArePartOfAResultsIdentity() async throws {
        let source = try Self.texturedPNG()
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("image-service-shared-\(UUID())")
        defer { try? FileManager.default.removeItem(at: shared) }
        let first = try await ServiceFixture.start({ $0.cacheDirectory = shared }) { _ in
            .respond(headers: [("Content-Type", "image/png")], body: source)
        }
        defer { Task { await first.origin.stop() } }
        let original = await first.get("/photo.png", "w=120&format=avif")
        let tag = try #require(original.headers[.eTag])
        try await Self.waitForStoredResult(of: original.body.count, in: shared)
        await first.stopService()

        let fast = try first.replica {
            $0.cacheDirectory = shared
            $0.effort[.avif] = .fast
        }
        let changed = await fast.get("/photo.png", "w=120&format=avif", headers: [.ifNoneMatch: tag])
        #expect(changed.status == .ok, "an ETag of other settings is not current")
        #expect(changed.headers[.eTag] != tag && changed.body != original.body)
        #expect(fast.count("decode") == 1, "rendered anew, not the stored result of other settings")
        await fast.stopService()

        let again = try first.replica {
            $0.cacheDirectory = shared
            $0.effort[.avif] = .balanced
        }
        let stored = await again.get("/photo.png", "w=120&format=avif")
        #expect(stored.headers[.eTag] == tag && stored.body == original.body)
        #expect(again.count("decode") == 0, "the same settings find the stored result")
        await again.stopService()
    }

    /// Waits (up to 10 s) until a file of at least `bytes` bytes is under `directory`'s result cache: the disk
    /// level is written in the background.
    static func waitForStoredResult(of bytes: Int, in directory: URL) async throws {
        try await ServiceFixture.waitForStoredFile(of: bytes, in: directory.appendingPathComponent("results"))
    }

    /// Placeholders: the string of the thumbnail the same request would render (its exact pixels are the PNG
    /// answer's), text/plain, cached with an ETag that answers 304.
    @Test(arguments: Placeholder.allCases) func placeholdersAreTheHashOfTheThumbnail(kind: Placeholder) async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let exact = await fixture.get("/photo.png", "w=96&h=96&fit=cover&format=png")
        let answer = await fixture.get("/photo.png", "w=96&h=96&fit=cover&format=\(kind.rawValue)")
        #expect(answer.status == .ok)
        #expect(answer.headers[.contentType] == Placeholder.contentType)
        let thumbnail = try PNGCoder.shared.decode(exact.body, options: ImageDecodeOptions())
        let expected =
            switch kind {
            case .blurhash: try BlurHash.encode(thumbnail)
            case .thumbhash: try thumbnail.thumbHash()
            }
        #expect(String(decoding: answer.body, as: UTF8.self) == expected)

        let tag = try #require(answer.headers[.eTag])
        #expect(tag != exact.headers[.eTag])
        let renders = fixture.count("decode")
        let notModified = await fixture.get(
            "/photo.png", "w=96&h=96&fit=cover&format=\(kind.rawValue)", headers: [.ifNoneMatch: tag])
        #expect(notModified.status == .notModified)
        #expect(fixture.count("decode") == renders, "a cached placeholder is not rendered again")
    }
}

extension Int {
    fileprivate func clamped(to range: ClosedRange<Int>) -> Int {
        Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}
