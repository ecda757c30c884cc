import Foundation
import ImageTestSupport
import PropertyBased
import Testing

@testable import ImageCore

/// The key builder writes keys eight bytes at a time and copies a transformer's part made once per context; these
/// properties hold it to a plain reference written with string operations (escape byte by byte, append the parts),
/// over strings whose spaces, backslashes and non-ASCII bytes fall at every offset of an eight-byte word.
@Suite struct CacheKeyReferenceTests {
    /// `\` as `\\`, a space as `\s`, a non-ASCII byte as `\xHH`, one UTF-8 byte at a time.
    static func referenceEscaped(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): result += "\\\\"
            case UInt8(ascii: " "): result += "\\s"
            case 0x80...: result += "\\x" + String(byte, radix: 16, uppercase: true)
            default: result.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return result
    }

    /// The format of ``CacheKeys``, written out: base, then ` name(value)` per part, then ` .ext` when a part was
    /// added and the URL has a short extension.
    static func referenceKey(
        base: String, url: URL, partition: String?, thumbnail: String?, rawOrientation: Bool, transformerKey: String?
    ) -> String {
        var parts: [String] = []
        if let partition { parts.append("partition(\(referenceEscaped(partition)))") }
        if let thumbnail { parts.append("thumbnail(\(thumbnail))") }
        if rawOrientation { parts.append("orientation(raw)") }
        if let transformerKey { parts.append("transform(\(referenceEscaped(transformerKey)))") }
        guard !parts.isEmpty else { return referenceEscaped(base) }
        var key = ([referenceEscaped(base)] + parts).joined(separator: " ")
        if let ext = URLScan.foundationShortExtension(of: url) { key += " .\(ext.string)" }
        return key
    }

    static let pieces = ["a", "Z", "9", " ", "\\", "é", "🙂", ".", "/", "(", ")", "-", "abcdefgh", "  ", "\\\\", "x y"]

    /// A string of 0–40 pieces from one seed.
    static func text(_ random: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...40, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test("escaped length and escaped text match the reference at every offset")
    func escapingMatchesTheReference() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int.max)) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let text = Self.text(&random)
            let expected = Self.referenceEscaped(text)
            #expect(CacheKeys.escapedLength(text) == expected.utf8.count, "\(text.debugDescription)")
            #expect(CacheKeys.escaped(text, length: CacheKeys.escapedLength(text)) == expected)
        }
    }

    @Test("the builder for a plain load matches the reference")
    func plainBuilderMatchesTheReference() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int.max)) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let base = Self.text(&random)
            #expect(CacheKeys.key(plainBase: base) == Self.referenceEscaped(base), "seed \(seed)")
        }
    }

    /// The transformer-only builder reads the absolute string's bytes once for the escape check, the extension
    /// scan (from the scheme's end a load found) and the copy: over URLs made of the pieces (escaped by `URL` as it
    /// parses them) and over every shape of the extension scan's table, its keys are the reference's.
    @Test("the builder for a transformer-only load matches the reference")
    func transformerBuilderMatchesTheReference() async {
        let schemes = ["https", "http", "bench", "data", "x+y"]
        let suffixes = ["", ".png", ".JPG", "?q=1.gif", "#f.webp", "/", ".tar.gz", ";v=1.png", "%2Epng"]
        let checked = Locked(0)
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int.max)) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let scheme = schemes.randomElement(using: &random)!
            let string = "\(scheme)://h/\(Self.text(&random))\(suffixes.randomElement(using: &random)!)"
            guard let url = URL(string: string) else { return }
            checked.withLock { $0 += 1 }
            let transformerKey = Self.text(&random)
            Self.expectTransformerKey(url: url, transformerKey: transformerKey, "seed \(seed)")
        }
        // A string `URL` refuses is skipped, so the property must have checked most of them.
        #expect(checked.value >= 250, "only \(checked.value) of 300 strings made a URL")
        for url in URLScanTests.urls() {
            Self.expectTransformerKey(url: url, transformerKey: "resize(256x256,aspectFit,lanczos3)", "\(url)")
        }
    }

    /// The transformer-only builder's key for `url`, with the scheme's end found as a load finds it, is the
    /// reference's.
    static func expectTransformerKey(url: URL, transformerKey: String, _ comment: Comment) {
        let absolute = url.absoluteString
        let expected = referenceKey(
            base: absolute, url: url, partition: nil, thumbnail: nil, rawOrientation: false,
            transformerKey: transformerKey)
        let schemeEnd = URLScan.plainSchemeEnd(url, absoluteString: absolute)
        let built = CacheKeys.key(
            absoluteString: absolute, url: url, schemeEnd: schemeEnd,
            transformer: TransformerKeyPart(key: transformerKey))
        #expect(built == expected, comment)
    }

    @Test("a load's key matches the reference format: filter output, partition, thumbnail, orientation, transformer")
    func keysMatchTheReference() async throws {
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        let extensions = ["png", "JPG", "jpeg", "webp1", "toolong", "", "a.b"]
        await propertyCheck(count: 400, input: Gen.int(in: 0...Int.max)) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let ext = extensions.randomElement(using: &random)!
            let path = String(Self.text(&random).unicodeScalars.filter { $0.isASCII && $0 != " " && $0 != "\\" })
            guard let url = URL(string: "https://h/\(path.isEmpty ? "x" : path)\(ext.isEmpty ? "" : ".")\(ext)")
            else { return }
            var context = ImageContext()
            let filterOutput = Bool.random(using: &random) ? Self.text(&random) : nil
            if let filterOutput { context.cacheKeyFilter = .block { _ in filterOutput } }
            let partition = Bool.random(using: &random) ? Self.text(&random) : nil
            if let partition { context.cachePartitionKey = partition }
            var thumbnail: String?
            if Bool.random(using: &random) {
                let size = PixelSize(
                    width: Int.random(in: 1...999, using: &random), height: Int.random(in: 1...999, using: &random))
                context.imageThumbnailPixelSize = size
                thumbnail = "\(size.width)x\(size.height),fit"
            }
            let rawOrientation = Bool.random(using: &random)
            if rawOrientation {
                var decode = ImageDecodeOptions()
                decode.applyOrientation = false
                context.imageDecodeOptions = decode
            }
            let transformerKey = Bool.random(using: &random) ? Self.text(&random) : nil
            if let transformerKey {
                context.imageTransformer = BlockTransformer(key: transformerKey) { image, _ in image }
            }
            let expected = Self.referenceKey(
                base: filterOutput ?? url.absoluteString, url: url, partition: partition, thumbnail: thumbnail,
                rawOrientation: rawOrientation, transformerKey: transformerKey)
            #expect(manager.cacheKey(for: url, context: context) == expected, "seed \(seed)")
            // The original key, made from the derived key on a miss: the base, the partition, the extension.
            let decode =
                LoadPlan.hasStandardDecodeOptions(options: [], context: context)
                ? nil : DecodeOptionsBox(LoadPlan.decodeOptions(options: [], context: context))
            let keys = LoadPlan.keys(
                for: url, absoluteString: url.absoluteString, context: context, decodeOptions: decode)
            let expectedOriginal = Self.referenceKey(
                base: filterOutput ?? url.absoluteString, url: url, partition: partition, thumbnail: nil,
                rawOrientation: false, transformerKey: nil)
            #expect(
                keys.originalKey(url: url, absoluteString: url.absoluteString, context: context) == expectedOriginal,
                "seed \(seed)")
        }
    }

    @Test func aManagerTransformersPartIsTheSameAsAContextsOne() throws {
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        let url = try #require(URL(string: "https://h/a b/c.PNG"))
        let transformer = BlockTransformer(key: "resize 10\\x") { image, _ in image }
        let fromContext = manager.cacheKey(for: url, context: ImageContext([.imageTransformer: transformer]))
        manager.transformer = transformer
        #expect(manager.cacheKey(for: url) == fromContext)
        #expect(fromContext == "https://h/a%20b/c.PNG transform(resize\\s10\\\\x) .png")
    }
}
