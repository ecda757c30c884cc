import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Testing

/// Keys are injective (issue 21, item 1): no URL, however it is spelled, and no filter output produces the key of
/// another (URL, partition, thumbnail, orientation, first frame, coder option, transformer) tuple. Stated as a
/// property over random tuples, half of them crafted from the keys of the others — a URL or a filter output that
/// spells another tuple's key, the attack that let an anonymous load read a tenant's image.
@Suite struct CacheKeyInjectivityTests {
    /// One load's inputs to its key.
    struct Tuple: Hashable, CustomStringConvertible {
        var url: String
        var filterOutput: String?
        var partition: String?
        var thumbnail: PixelSize?
        var fill = false
        var rawOrientation = false
        var firstFrame = false
        var coderOption: String?
        var transformerKey: String?

        /// What the key must tell apart: the base (filter output, else the URL as Foundation reads it: two spellings
        /// of one URL are one URL), and the parts that apply.
        var identity: [String?] {
            [
                filterOutput ?? URL(string: url)?.absoluteString ?? url, partition, thumbnail.map { "\($0)" },
                thumbnail == nil ? nil : "\(fill)",
                "\(rawOrientation)", "\(firstFrame)", coderOption, transformerKey,
            ]
        }

        var description: String { identity.map { $0 ?? "nil" }.joined(separator: " | ") }

        var options: ImageOptions { firstFrame ? .decodeFirstFrameOnly : [] }

        var context: ImageContext {
            var context = ImageContext()
            if let filterOutput { context.cacheKeyFilter = .block { _ in filterOutput } }
            if let partition { context.cachePartitionKey = partition }
            var decode = ImageDecodeOptions()
            decode.thumbnailPixelSize = thumbnail
            decode.preserveAspectRatio = !fill
            decode.applyOrientation = !rawOrientation
            if let coderOption { decode.coderOptions[TestOption.self] = coderOption }
            context.imageDecodeOptions = decode
            if let transformerKey {
                context.imageTransformer = BlockTransformer(key: transformerKey) { image, _ in image }
            }
            return context
        }
    }

    enum TestOption: CoderOptionKey {
        typealias Value = String
        static let name = "test.option"
    }

    /// Pieces that stress the old `-`-joined format and any naive escaping.
    static let pieces = [
        "a", "b", "7", "-", "(", ")", ".", "%", "%20", "#", "@", "/", " ", "\\", "\\s", "é", "🙂", ",", "=",
        "-partition(", "partition(", " partition(", "thumbnail(1x1,fit)", " thumbnail(", "transform(", "frames(first)",
        "orientation(raw)", "coder(", ".png", " .png", "?q=", "&",
    ]
    /// A random tuple, built from one seed (so every tuple replays from the property's printed seed).
    static func tuple(seed: Int) -> Tuple {
        var random = SplitMix64(seed: UInt64(seed))
        func text() -> String {
            (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        func maybeText() -> String? { Double.random(in: 0..<1, using: &random) < 0.4 ? text() : nil }
        var tuple = Tuple(url: "https://h/" + text())
        tuple.partition = maybeText()
        if Bool.random(using: &random) {
            tuple.thumbnail = PixelSize(
                width: Int.random(in: 1...300, using: &random), height: Int.random(in: 1...300, using: &random))
            tuple.fill = Bool.random(using: &random)
        }
        tuple.rawOrientation = Bool.random(using: &random)
        tuple.firstFrame = Bool.random(using: &random)
        if Bool.random(using: &random) { tuple.coderOption = maybeText() } else { tuple.transformerKey = maybeText() }
        return tuple
    }

    static let tuples = Gen.int(in: 0...Int.max).array(of: 2...8).map { seeds in seeds.map(tuple(seed:)) }

    @Test("distinct tuples give distinct keys, crafted URLs and filter outputs included")
    func distinctTuplesGiveDistinctKeys() async {
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        var checked = 0
        await propertyCheck(count: 300, input: Self.tuples) { tuples in
            var all = tuples
            // The attack: a URL (or a filter output) that spells another tuple's key.
            for original in tuples {
                guard let key = Self.key(original, manager) else { continue }
                all.append(Tuple(url: key))
                all.append(Tuple(url: "https://h/other", filterOutput: key))
                if let url = URL(string: key) { all.append(Tuple(url: url.absoluteString)) }
            }
            var owners: [String: Tuple] = [:]
            for tuple in all {
                guard let key = Self.key(tuple, manager) else { continue }
                checked += 1
                if let owner = owners[key], owner.identity != tuple.identity {
                    Issue.record("one key for two tuples:\n  \(owner)\n  \(tuple)\n  key: \(key)")
                }
                owners[key] = tuple
            }
        }
        print("CacheKeyInjectivityTests: \(checked) keys checked")
        #expect(checked > 1000)
    }

    static func key(_ tuple: Tuple, _ manager: ImageManager) -> String? {
        guard let url = URL(string: tuple.url) else { return nil }
        return manager.cacheKey(for: url, options: tuple.options, context: tuple.context)
    }

    /// `String` equality is Unicode canonical equivalence, byte-wise file names are not: keys are ASCII, so two
    /// spellings of a partition are two keys for every level alike.
    @Test func canonicallyEquivalentSpellingsAreDistinctKeys() async throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed, "Swift calls them equal")
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        let url = URL(string: "https://h/a.png")!
        let first = try #require(manager.cacheKey(for: url, context: ImageContext([.cachePartitionKey: composed])))
        let second = try #require(manager.cacheKey(for: url, context: ImageContext([.cachePartitionKey: decomposed])))
        #expect(first != second)
        #expect(first.utf8.allSatisfy { $0 < 0x80 } && second.utf8.allSatisfy { $0 < 0x80 })
    }

    /// The case of the issue, spelled out: the crafted URL does not reach the tenant's entry.
    @Test func aCraftedURLDoesNotSpellATenantsKey() throws {
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        let tenant = manager.cacheKey(
            for: URL(string: "https://h/cat.png")!, context: ImageContext([.cachePartitionKey: "tenant-7"]))
        for crafted in [
            "https://h/cat.png-partition(tenant-7).png", "https://h/cat.png partition(tenant-7) .png",
            "https://h/cat.png%20partition(tenant-7)%20.png",
        ] {
            let url = try #require(URL(string: crafted))
            #expect(manager.cacheKey(for: url) != tenant, "\(crafted)")
        }
        let upload = manager.cacheKey(for: URL(string: "https://h/a.png-thumbnail(256x256,fit).png")!)
        let thumbnail = manager.cacheKey(
            for: URL(string: "https://h/a.png")!,
            context: ImageContext([.imageThumbnailPixelSize: PixelSize(width: 256, height: 256)]))
        #expect(upload != thumbnail)
    }
}
