import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Entry file names: BLAKE3 against the official test vectors, the version-2 shape, version-1 entries as clean
/// misses, and (issue 21 item 1) a property over random keys: distinct keys never share a file, and an entry is
/// returned only for its own key.
@Suite("DiskCache file naming")
struct DiskFileNamingTests {
    /// Lowercase hex of a digest's bytes, in order.
    static func hex(_ words: BLAKE3.Words) -> String {
        withUnsafeBytes(of: words) { raw in
            raw.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// BLAKE3 keyed hash of `bytes`.
    static func blake3(_ bytes: [UInt8], key: String) -> String {
        let words = BLAKE3.keyWords(Array(key.utf8))
        return bytes.withUnsafeBytes { hex(BLAKE3.keyedHash($0, key: words)) }
    }

    /// The first 32 bytes of `keyed_hash` from BLAKE3's official test_vectors.json (input: bytes 0, 1, …, 250
    /// repeated; key "whats the Elvish word for friend"): chunk and tree boundaries on both sides.
    static let officialKeyedVectors: [(length: Int, digest: String)] = [
        (0, "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"),
        (1, "6d7878dfff2f485635d39013278ae14f1454b8c0a3a2d34bc1ab38228a80c95b"),
        (1023, "c951ecdf03288d0fcc96ee3413563d8a6d3589547f2c2fb36d9786470f1b9d6e"),
        (1024, "75c46f6f3d9eb4f55ecaaee480db732e6c2105546f1e675003687c31719c7ba4"),
        (1025, "357dc55de0c7e382c900fd6e320acc04146be01db6a8ce7210b7189bd664ea69"),
        (2048, "879cf1fa2ea0e79126cb1063617a05b6ad9d0b696d0d757cf053439f60a99dd1"),
        (2049, "9f29700902f7c86e514ddc4df1e3049f258b2472b6dd5267f61bf13983b78dd5"),
        (3072, "044a0e7b172a312dc02a4c9a818c036ffa2776368d7f528268d2e6b5df191770"),
        (3073, "68dede9bef00ba89e43f31a6825f4cf433389fedae75c04ee9f0cf16a427c95a"),
        (4096, "befc660aea2f1718884cd8deb9902811d332f4fc4a38cf7c7300d597a081bfc0"),
        (4097, "00df940cd36bb9fa7cbbc3556744e0dbc8191401afe70520ba292ee3ca80abbc"),
        (5121, "6ccf1c34753e7a044db80798ecd0782a8f76f33563accaddbfbb2e0ea4b2d024"),
        (7169, "ed9b1a922c046fdb3d423ae34e143b05ca1bf28b710432857bf738bcedbfa511"),
    ]

    @Test("BLAKE3 keyed hash matches the official test vectors", arguments: officialKeyedVectors)
    func officialVectors(length: Int, digest: String) {
        let input = (0..<length).map { UInt8($0 % 251) }
        #expect(Self.blake3(input, key: "whats the Elvish word for friend") == digest)
    }

    @Test("version-2 names: prefix, 64 hex digits, an optional short extension; version-1 names are told apart")
    func nameShapes() {
        let name = DiskFileNaming.fileName(forKey: "https://example.com/a.WEBP?x#y")
        #expect(name.hasPrefix("v2-") && name.hasSuffix(".webp"))
        #expect(DiskFileNaming.isEntryName(name))
        #expect(!DiskFileNaming.isLegacyEntryName(name))
        let legacy = String(repeating: "ab", count: 32)
        #expect(DiskFileNaming.isLegacyEntryName(legacy) && DiskFileNaming.isLegacyEntryName(legacy + ".png"))
        #expect(!DiskFileNaming.isEntryName(legacy + ".png"))
        for foreign in ["v2-" + legacy + ".toolong", "v2-" + legacy.uppercased(), "v3-" + legacy, legacy + "x", ""] {
            #expect(!DiskFileNaming.isEntryName(foreign) && !DiskFileNaming.isLegacyEntryName(foreign), "\(foreign)")
        }
    }

    @Test("an entry of format version 1 is a clean miss, is never misread, and the next sweep removes it")
    func legacyEntriesAreCleanMisses() throws {
        let directory = CacheFixtures.temporaryDirectory("disk-legacy")
        defer { DiskTest.removeDirectory(directory) }
        // What version 1 wrote for this key: a valid WIC1 entry file named by the SHA-256 of the key.
        let key = "https://example.com/cat.png"
        let header = try DiskEntryCodec.header(
            for: CacheEntryMetadata(originalKey: key, etag: "old"), bodyLength: 3, bodyChecksum: 0)
        let legacyName = String(repeating: "0123456789abcdef", count: 4) + ".png"
        try Data(header + [1, 2, 3]).write(to: directory.appendingPathComponent(legacyName))
        // The directory of a version-1 cache carries the marker (every version made it): version-1 entries go,
        // foreign files stay.
        try Data().write(to: directory.appendingPathComponent(DiskEntryStore.markerName))
        try Data("mine".utf8).write(to: directory.appendingPathComponent("notes.txt"))

        let cache = DiskCache(configuration: DiskTest.configuration(directory))
        #expect(try cache.entry(forKey: key) == nil)
        #expect(!cache.containsData(forKey: key))
        cache.sweep()
        #expect(DiskTest.files(in: directory) == ["notes.txt"])
        try cache.storeData(Data([9]), forKey: key)
        #expect(try cache.entry(forKey: key)?.data == Data([9]))
        #expect(DiskTest.files(in: directory).contains(DiskFileNaming.fileName(forKey: key)))
    }

    // MARK: Property (issue 21 item 1)

    /// Pieces keys are built from: the characters the issue names, percent-encodings, unicode in both
    /// normalization forms, and fragments of what the key builder writes.
    static let pieces: [String] = [
        "a", "b", "Z", "0", "9", "-", "(", ")", ".", "%", "#", "@", "/", " ", "\n", "\t", "?", "=", "&", ":", "_",
        "%2F", "%25", "%20", "%0A", "%2d", "%2D", "é", "e\u{301}", "中", "😀", "🇫🇷", "\u{0}", "..", "//",
        "https://h/", ".png", ".PNG", "-thumbnail(256x256,fit)", "-partition(tenant-7)", "|", "3:", "\u{FEFF}",
    ]

    static let keyGenerator = Gen<String?>.element(of: pieces).map { $0 ?? "" }.array(of: 0...16).map {
        $0.joined()
    }

    /// How the second key of a pair is made from the first, so most pairs are near-misses rather than strangers.
    static func variant(of key: String, _ how: Int, _ other: String) -> String {
        switch how {
        case 0: return other
        case 1: return key + other
        case 2: return other + key
        case 3: return String(key.dropLast())
        case 4: return key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? key + "%"
        case 5: return key.removingPercentEncoding ?? key + "%25"
        case 6: return key.decomposedStringWithCanonicalMapping
        case 7: return key.precomposedStringWithCanonicalMapping
        case 8: return key.uppercased()
        default: return key + "\u{0}"
        }
    }

    @Test("property: distinct keys never share a file name, and a stored entry is returned only for its own key")
    func distinctKeysDistinctFiles() async throws {
        let directory = CacheFixtures.temporaryDirectory("disk-property")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        let cases = Atomic<Int>(0)
        let distinctPairs = Atomic<Int>(0)
        print("DiskFileNaming property: 400 random key pairs (a failure prints the seed to replay it with .fixedSeed)")
        await propertyCheck(count: 400, input: Self.keyGenerator, Self.keyGenerator, Gen.int(in: 0...9)) {
            key, other, how in
            let twin = Self.variant(of: key, how, other)
            cases.add(1, ordering: .relaxed)
            // Keys are their UTF-8 bytes: canonically equivalent spellings (NFC, NFD) are distinct keys.
            let distinct = Array(key.utf8) != Array(twin.utf8)
            let (name, twinName) = (DiskFileNaming.fileName(forKey: key), DiskFileNaming.fileName(forKey: twin))
            #expect(DiskFileNaming.isEntryName(name))
            #expect(distinct == (name != twinName), "keys \(key.debugDescription) / \(twin.debugDescription)")
            guard distinct else { return }
            distinctPairs.add(1, ordering: .relaxed)
            cache.removeAll()
            let body = Data("body of \(key)".utf8)
            try cache.storeData(body, metadata: CacheEntryMetadata(etag: "first"), forKey: key)
            #expect(try cache.entry(forKey: twin) == nil, "\(twin.debugDescription) read \(key.debugDescription)")
            #expect(try cache.entry(forKey: key)?.data == body)
            try cache.storeData(Data("twin".utf8), forKey: twin)
            #expect(try cache.entry(forKey: key)?.data == body)
            #expect(try cache.entry(forKey: twin)?.data == Data("twin".utf8))
            #expect(DiskTest.files(in: directory).count == 2)
        }
        print(
            "DiskFileNaming property: \(cases.load(ordering: .relaxed)) cases, \(distinctPairs.load(ordering: .relaxed)) distinct pairs stored"
        )
        #expect(distinctPairs.load(ordering: .relaxed) > 200, "most pairs must exercise the store")
    }

    /// The extension rule written plainly (as names computed it before the `memchr` scan): the last `.`
    /// after the last `/`, up to the first `?` or `#`, then 1 to 5 ASCII letters or digits.
    static func referenceExtensionRange(_ bytes: [UInt8]) -> Range<Int>? {
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        let path = bytes[..<end]
        let segmentStart = (path.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        guard let dot = path[segmentStart...].lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let range = (dot + 1)..<end
        let alphanumeric = bytes[range].allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        return (1...DiskFileNaming.maxExtensionLength).contains(range.count) && alphanumeric ? range : nil
    }

    @Test("property: the extension of a key's file name is the one the plain rule finds, for any key")
    func extensionMatchesTheReference() async {
        print("DiskFileNaming extension property: 2,000 random keys (a failure prints the seed)")
        let suffixes = Gen<String?>.element(of: [
            "", ".jpg", ".JPEG", ".webp?v=1", ".a1b2c", ".abcdef", "x/.p", "?.png",
        ])
        await propertyCheck(count: 2000, input: Self.keyGenerator, suffixes.map { $0 ?? "" }) { key, suffix in
            let key = key + suffix
            let bytes = Array(key.utf8)
            let found = bytes.withUnsafeBufferPointer { DiskFileNaming.pathExtensionRange(of: $0) }
            #expect(found == Self.referenceExtensionRange(bytes), "key \(key.debugDescription)")
            let expected = Self.referenceExtensionRange(bytes).map {
                String(decoding: bytes[$0], as: UTF8.self).lowercased()
            }
            #expect(DiskFileNaming.pathExtension(of: key) == expected, "key \(key.debugDescription)")
        }
    }

    @Test("an entry file copied under another key's name is that key's miss, never its hit")
    func foreignFileUnderMyName() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data("tenant-7's image".utf8), forKey: "https://h/cat.png-partition(tenant-7).png")
        try FileManager.default.copyItem(
            at: cache.fileURL(forKey: "https://h/cat.png-partition(tenant-7).png"),
            to: cache.fileURL(forKey: "https://h/cat.png"))
        #expect(try cache.entry(forKey: "https://h/cat.png") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "https://h/cat.png").path))
    }
}
