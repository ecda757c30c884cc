import Foundation
import ImageCore
import Testing

@testable import ImageService
@testable import ImageServiceQuery

/// The query parser, presets, signatures and keys, as pure values.
@Suite struct OptionsAndSigningTests {
    let parser = OptionsParser(limits: .init(maxSide: 1000))

    func parse(_ query: String, parser: OptionsParser? = nil) throws -> ThumbnailOptions {
        try (parser ?? self.parser).parse(try QueryString.pairs(query))
    }

    @Test(arguments: [
        ("url=http%3A%2F%2Fh%2Fa.gif&w=0", "w must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=1001", "w must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&h=ten", "h must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&fit=squash", "fit must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&gravity=up", "gravity must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&gravity=fp:2:0", "gravity must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&dpr=9", "dpr must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=600&dpr=2", "w and h times dpr"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&q=0", "q must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&format=bmp", "format must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&anim=2", "anim must"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&w=20", "w is given twice"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&cachebuster=1", "unknown parameter"),
        ("url=http%3A%2F%2Fh%2Fa.gif&w=10&preset=nope", "unknown preset"),
        ("url=http%3A%2F%2Fh%2Fa.gif", "give w, h or both"),
        ("w=10", "url is required"),
        ("url=%2Fsamples%2Fa.jpg&w=10", "url: "),
    ])
    func malformedQueriesAreRefusedByName(query: String, says expected: String) {
        #expect {
            _ = try parse(query)
        } throws: { error in
            (error as? OptionsParser.Invalid)?.message.hasPrefix(expected) == true
        }
    }

    @Test func aServerThatAllowsNoSizeRefusesEverySizeInsteadOfTrapping() {
        let parser = OptionsParser(limits: .init(maxSide: 0))
        #expect(throws: OptionsParser.Invalid.self) { try parse("url=http%3A%2F%2Fh%2Fa&w=1", parser: parser) }
    }

    @Test func optionsAndTheirCanonicalDescription() throws {
        let options = try parse(
            "url=http%3A%2F%2Fh%2Fa.jpg&w=100&h=50&fit=cover&gravity=fp:0.25:0.75&dpr=2&q=70&format=webp")
        #expect(options.box == PixelSize(width: 200, height: 100))
        #expect(options.fit == .cover && options.quality == 70 && options.format == .explicit(.webp))
        #expect(options.gravity == .focus(x: 0.25, y: 0.75))
        #expect(options.canonicalDescription == "fit=cover;box=200x100;g=fp(0.2500,0.7500);enlarge=0;q=70;anim=0")
        // A missing side takes the other's value; aliases read as their canonical fit.
        let square = try parse("url=http%3A%2F%2Fh%2Fa.jpg&h=30&fit=force")
        #expect(square.size == PixelSize(width: 30, height: 30) && square.fit == .fill)
        // The same request spelled two ways has one description (and so one cache key).
        let a = try parse("url=http%3A%2F%2Fh%2Fa.jpg&w=10&h=10&gravity=north")
        let b = try parse("h=10&gravity=n&w=10&url=http://h/a.jpg")
        #expect(a.canonicalDescription == b.canonicalDescription && a.source == b.source)
    }

    @Test func limitsOnWidthsHeightsAndAnimation() throws {
        let strict = OptionsParser(
            limits: .init(maxSide: 1000, allowedWidths: [100, 200], allowedHeights: [100], allowsAnimation: false))
        #expect(try parse("url=http%3A%2F%2Fh%2Fa&w=200&h=100", parser: strict).size.width == 200)
        #expect(throws: OptionsParser.Invalid.self) { try parse("url=http%3A%2F%2Fh%2Fa&w=150&h=100", parser: strict) }
        #expect(throws: OptionsParser.Invalid.self) { try parse("url=http%3A%2F%2Fh%2Fa&w=100&h=101", parser: strict) }
        #expect(throws: OptionsParser.Invalid.self) {
            try parse("url=http%3A%2F%2Fh%2Fa&w=100&h=100&anim=1", parser: strict)
        }
    }

    @Test func presetsApplyInOrderAndRequestsOverrideThem() throws {
        let presets = try Presets([
            "default": "q=60", "thumb": "w=200&h=200&fit=cover", "square": "w=50&h=50", "webp": "format=webp",
        ])
        let parser = OptionsParser(limits: .init(maxSide: 1000), presets: presets)
        let thumb = try parse("url=http%3A%2F%2Fh%2Fa&preset=thumb", parser: parser)
        #expect(thumb.size.width == 200 && thumb.fit == .cover && thumb.quality == 60)
        let combined = try parse("url=http%3A%2F%2Fh%2Fa&preset=thumb,square,webp&q=90", parser: parser)
        #expect(combined.size.width == 50 && combined.fit == .cover && combined.format == .explicit(.webp))
        #expect(combined.quality == 90)
        #expect(throws: OptionsParser.Invalid.self) { try Presets(["bad": "url=http://x/"]) }
        #expect(throws: OptionsParser.Invalid.self) { try Presets(["bad": "w=1&w=2"]) }

        let only = OptionsParser(limits: .init(maxSide: 1000, presetsOnly: true), presets: presets)
        #expect(try parse("url=http%3A%2F%2Fh%2Fa&preset=thumb", parser: only).size.width == 200)
        #expect(throws: OptionsParser.Invalid.self) {
            try parse("url=http%3A%2F%2Fh%2Fa&preset=thumb&w=10", parser: only)
        }
        #expect(throws: OptionsParser.Invalid.self) { try parse("url=http%3A%2F%2Fh%2Fa", parser: only) }
    }

    @Test func signaturesWithRotation() throws {
        let old = try URLSigner(encodedKeys: ["00112233445566778899aabbccddeeff"])
        let new = try URLSigner(encodedKeys: ["base64:q83vASNFZ4mrze8BI0VniQ"])
        let rotating = try URLSigner(encodedKeys: ["base64:q83vASNFZ4mrze8BI0VniQ", "00112233445566778899aabbccddeeff"])
        let query = "url=http%3A%2F%2Fh%2Fa.jpg&w=100"
        let signedOld = old.sign(path: "/thumbnail", query: query)
        let signedNew = new.sign(path: "/thumbnail", query: query)
        func split(_ signed: String) -> (String, String) {
            let parts = signed.split(separator: "?", maxSplits: 1)
            return (String(parts[0]), String(parts[1]))
        }
        // During the rotation both keys pass; afterwards only the new one.
        for signed in [signedOld, signedNew] {
            let (path, query) = split(signed)
            try rotating.verify(path: path, query: query)
        }
        let (oldPath, oldQuery) = split(signedOld)
        #expect(throws: URLSigner.Refusal.mismatch) { try new.verify(path: oldPath, query: oldQuery) }
        // Anything changed in path or query fails; so does a missing or doubled sig.
        #expect(throws: URLSigner.Refusal.mismatch) { try old.verify(path: "/thumbnail2", query: oldQuery) }
        #expect(throws: URLSigner.Refusal.mismatch) {
            try old.verify(path: oldPath, query: oldQuery.replacingOccurrences(of: "w=100", with: "w=101"))
        }
        #expect(throws: URLSigner.Refusal.mismatch) { try old.verify(path: oldPath, query: oldQuery + "&q=5") }
        #expect(throws: URLSigner.Refusal.missing) { try old.verify(path: oldPath, query: query) }
        #expect(throws: URLSigner.Refusal.missing) {
            try old.verify(path: oldPath, query: oldQuery + "&sig=" + old.signature(path: oldPath, query: query))
        }
        // The sig may sit anywhere in the query.
        let sig = old.signature(path: "/thumbnail", query: query)
        try old.verify(path: "/thumbnail", query: "sig=\(sig)&\(query)")
        // Keys too short or not hex/base64 are refused at start-up.
        #expect(throws: URLSigner.InvalidKey.self) { try URLSigner(encodedKeys: ["abcd"]) }
        #expect(throws: URLSigner.InvalidKey.self) { try URLSigner(encodedKeys: ["not-a-key-not-a-key-not-a-key-xx"]) }
    }

    @Test func signedURLsExpire() throws {
        let signer = try URLSigner(encodedKeys: ["00112233445566778899aabbccddeeff"])
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let query = "url=http%3A%2F%2Fh%2Fa.jpg&w=100&expires=1800000100"
        let sig = signer.signature(path: "/thumbnail", query: query)
        try signer.verify(path: "/thumbnail", query: query + "&sig=" + sig, now: now)
        #expect(throws: URLSigner.Refusal.expired) {
            try signer.verify(path: "/thumbnail", query: query + "&sig=" + sig, now: now.addingTimeInterval(101))
        }
    }

    /// Property: distinct (source, options, encoding, output settings) tuples have distinct result keys and ETags,
    /// including tuples built to collide if parts were simply joined. Random tuples, seed printed.
    @Test func keysAreInjective() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("keysAreInjective seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        let alphabet = Array("ab-()._%#@;=/?&0129")
        var seen: [String: String] = [:]
        var tags: [String: String] = [:]
        for _ in 0..<3000 {
            let path = String(
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let source = try SourceURL("http://h\(Int.random(in: 0...2, using: &generator)).example/\(path)")
            let options = ThumbnailOptions(
                source: source,
                size: PixelSize(
                    width: Int.random(in: 1...3, using: &generator), height: Int.random(in: 1...3, using: &generator)),
                fit: Fit.allCases.randomElement(using: &generator)!,
                gravity: [.center, .smart, .edge(dx: 1, dy: 0)].randomElement(using: &generator)!,
                dpr: [1, 2].randomElement(using: &generator)!, enlarge: Bool.random(using: &generator),
                quality: [nil, 50].randomElement(using: &generator)!, format: .auto,
                animated: Bool.random(using: &generator))
            let encoding: OutputEncoding = [.jpegOrPNG, .source, .format(.webp)].randomElement(using: &generator)!
            var settings = ImageServiceConfiguration()
            settings.quality[.webp] = [80, 81].randomElement(using: &generator)!
            settings.effort[.avif] = [.fast, .balanced].randomElement(using: &generator)!
            let rendering = EncodingSettings(settings).fingerprint
            let identity = "\(source.canonical)|\(options.canonicalDescription)|\(encoding)|\(rendering)"
            let key = ServiceKeys.resultKey(options, encoding: encoding, rendering: rendering)
            if let other = seen[key] {
                #expect(other == identity, "seed \(seed): \(other) and \(identity) share \(key)")
            }
            seen[key] = identity
            let tag = ServiceKeys.entityTag(
                options, encoding: encoding, rendering: rendering, sourceValidator: "etag:\"1\"")
            if let other = tags[tag] { #expect(other == identity, "seed \(seed)") }
            tags[tag] = identity
        }
        // Parts that would meet when concatenated don't.
        let a = try SourceURL("http://h.example/a")
        let b = try SourceURL("http://h.example/a-")
        #expect(ServiceKeys.sourceKey(a) != ServiceKeys.sourceKey(b))
        #expect(ServiceKeys.digest(["ab", "c"]) != ServiceKeys.digest(["a", "bc"]))
    }

    @Test func encodingChoice() {
        typealias N = ContentNegotiation
        #expect(N.encoding(accept: "image/avif,image/webp", canEncodeAVIF: true) == .format(.avif))
        #expect(N.encoding(accept: "image/webp, image/AVIF;q=0.5", canEncodeAVIF: true) == .format(.avif))
        #expect(N.encoding(accept: "image/avif;q=0,image/webp", canEncodeAVIF: true) == .format(.webp))
        #expect(N.encoding(accept: "image/avif;q=0.0", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: "image/avif,image/webp", canEncodeAVIF: false) == .format(.webp))
        #expect(N.encoding(accept: "image/*,*/*", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: nil, canEncodeAVIF: true) == .jpegOrPNG)
        // A client that takes only one of JPEG and PNG gets that one (before: JPEG for any opaque image).
        #expect(N.encoding(accept: "image/png", canEncodeAVIF: true) == .format(.png))
        #expect(N.encoding(accept: "image/png, image/*;q=0", canEncodeAVIF: true) == .format(.png))
        #expect(N.encoding(accept: "image/jpeg", canEncodeAVIF: true) == .format(.jpeg))
        #expect(N.encoding(accept: "image/jpg, image/png;q=0", canEncodeAVIF: true) == .format(.jpeg))
        #expect(N.encoding(accept: "image/png, image/jpeg;q=0.5", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: "image/png, */*;q=0.1", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: "image/*, image/jpeg;q=0", canEncodeAVIF: true) == .format(.png))
        #expect(N.encoding(accept: "text/html", canEncodeAVIF: true) == .jpegOrPNG)
        #expect(N.encoding(accept: "image/avif", canEncodeAVIF: false) == .jpegOrPNG)
        #expect(FormatRequest.source.encoding(accept: "image/webp", canEncodeAVIF: true) == .source)
    }

    @Test func conditionalRequests() {
        typealias C = ConditionalRequest
        #expect(C.matches(ifNoneMatch: "\"a\", W/\"b\"", etag: "\"b\""))
        #expect(C.matches(ifNoneMatch: "*", etag: "\"b\""))
        #expect(!C.matches(ifNoneMatch: "\"a\"", etag: "\"b\""))
        let lastModified = "Tue, 01 Sep 2026 00:00:00 GMT"
        #expect(
            C.isNotModified(ifNoneMatch: nil, ifModifiedSince: lastModified, etag: "\"x\"", lastModified: lastModified))
        #expect(
            !C.isNotModified(
                ifNoneMatch: nil, ifModifiedSince: "Mon, 31 Aug 2026 00:00:00 GMT", etag: "\"x\"",
                lastModified: lastModified))
        // If-None-Match wins over If-Modified-Since.
        #expect(
            !C.isNotModified(
                ifNoneMatch: "\"y\"", ifModifiedSince: lastModified, etag: "\"x\"", lastModified: lastModified))
    }
}
