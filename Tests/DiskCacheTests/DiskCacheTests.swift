import Foundation
import ImageCore
import ImageTestSupport
import Testing

@_spi(Fuzzing) @testable import DiskCache

@Suite("DiskCache entries")
struct DiskCacheTests {
    @Test("bytes and metadata round-trip; the file name is v2-, the BLAKE3 of the key and its extension")
    func roundTrip() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        let bytes = CacheFixtures.bytes(count: 50_000, seed: 1)
        let expires = Date(timeIntervalSince1970: 1_800_000_000.5)
        let metadata = CacheEntryMetadata(
            contentType: "image/png", etag: "\"abc\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT", maxAge: 3600,
            expiresAt: expires)
        let key = "https://example.com/images/cat.PNG?size=large#x"
        try cache.storeData(bytes, metadata: metadata, forKey: key)

        let entry = try #require(try cache.entry(forKey: key))
        #expect(entry.data == bytes)
        #expect(entry.metadata.originalKey == key)
        #expect(entry.metadata.contentType == "image/png")
        #expect(entry.metadata.etag == "\"abc\"")
        #expect(entry.metadata.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(entry.metadata.maxAge == 3600)
        #expect(entry.metadata.expiresAt == expires)
        #expect(entry.metadata.size == 50_000)
        #expect(entry.metadata.storedAt != nil)
        #expect(entry.metadata.lastAccess != nil)

        // "v2-" + BLAKE3-keyed("https://example.com/images/cat.PNG?size=large#x") + ".png"
        let name = DiskFileNaming.fileName(forKey: key)
        #expect(name.hasPrefix("v2-") && name.hasSuffix(".png") && name.count == 71)
        #expect(DiskTest.files(in: directory) == [name])
        #expect(cache.fileURL(forKey: key).lastPathComponent == name)
        #expect(cache.totalCount() == 1)
        #expect(cache.totalSize() > 50_000)
        #expect(cache.containsData(forKey: key))
        #expect(!cache.containsData(forKey: "other"))
        #expect(try cache.entry(forKey: "other") == nil)
    }

    @Test("names are the keyed BLAKE3 of the key's UTF-8; the extension is the path's, lowercased")
    func knownDigest() {
        // Expected digests from the BLAKE3 reference implementation (the `blake3` Python package), keyed with
        // "webimage disk cache file name v2".
        #expect(
            DiskFileNaming.fileName(forKey: "abc")
                == "v2-4c4c699768cb8a5cbd2cb6e7c169310f8780affab58597010e6a70d8b01fa1dd")
        #expect(
            DiskFileNaming.fileName(forKey: "a/b.JPG")
                == "v2-2daaa43f7a5aa46d71998df766ad91a2141f0f12559c8050d6429b5f932b7fef.jpg")
        #expect(
            DiskFileNaming.fileName(forKey: "")
                == "v2-e7f27cafbe1fdc9db42e6fcacfe0cf55e0662d953acae3c67b863a71269c5b48")
        #expect(DiskFileNaming.pathExtension(of: "a/b.jpeg") == "jpeg")
        #expect(DiskFileNaming.pathExtension(of: "a/b.WebP?x=1.png") == "webp")
        #expect(DiskFileNaming.pathExtension(of: "a.b/c") == nil)
        #expect(DiskFileNaming.pathExtension(of: "a/b.toolong") == nil)
        #expect(DiskFileNaming.pathExtension(of: "a/b.p-g") == nil)
        #expect(DiskFileNaming.pathExtension(of: "a/b.") == nil)
    }

    @Test("hostile keys map to safe names inside the directory and round-trip")
    func hostileKeys() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        let keys = [
            "/", "..", "../../etc/passwd", "a/../../b.png", "nul\0byte.png", "\0",
            String(repeating: "k", count: 10_240),
            "🖼️/😀.gif", "", "x.ÄÖ", "dir/.hidden", "a\nb.jpg",
        ]
        for (index, key) in keys.enumerated() {
            try cache.storeData(Data([UInt8(index)]), forKey: key)
        }
        let names = DiskTest.files(in: directory)
        #expect(names.count == keys.count)
        for name in names {
            #expect(DiskFileNaming.isEntryName(name), "unsafe name \(name)")
            #expect(name.utf8.count <= DiskEntryName.maxFileNameLength)
        }
        for (index, key) in keys.enumerated() {
            #expect(cache.data(forKey: key) == Data([UInt8(index)]))
        }
        // Nothing was created outside the directory.
        let parent = directory.deletingLastPathComponent()
        #expect(!FileManager.default.fileExists(atPath: parent.appendingPathComponent("b.png").path))
    }

    @Test("a new cache on the same directory finds the entries (restart)")
    func restart() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        do {
            let first = DiskTest.cache(directory, maxDiskSize: 10 << 20)
            try first.storeData(Data("hello".utf8), metadata: CacheEntryMetadata(etag: "v1"), forKey: "k.jpg")
        }
        let second = DiskTest.cache(directory, maxDiskSize: 10 << 20)
        let entry = try #require(try second.entry(forKey: "k.jpg"))
        #expect(entry.data == Data("hello".utf8))
        #expect(entry.metadata.etag == "v1")
    }

    @Test("replacing an entry keeps one file with the new bytes")
    func replace() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        try cache.storeData(Data(repeating: 1, count: 1000), forKey: "k")
        try cache.storeData(Data(repeating: 2, count: 10), forKey: "k")
        #expect(cache.data(forKey: "k") == Data(repeating: 2, count: 10))
        #expect(DiskTest.files(in: directory).count == 1)
        cache.removeData(forKey: "k")
        #expect(cache.data(forKey: "k") == nil)
        #expect(DiskTest.files(in: directory).isEmpty)
    }

    @Test("an empty body round-trips")
    func emptyBody() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data(), forKey: "empty")
        #expect(try cache.entry(forKey: "empty")?.data == Data())
    }

    @Test("truncated, padded, garbage and wrong-key entry files are misses and are removed")
    func corruptFiles() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        let bytes = CacheFixtures.bytes(count: 4096, seed: 2)
        let fm = FileManager.default

        try cache.storeData(bytes, forKey: "truncated")
        let truncated = cache.fileURL(forKey: "truncated")
        let whole = try Data(contentsOf: truncated)
        try whole.prefix(whole.count / 2).write(to: truncated)
        #expect(try cache.entry(forKey: "truncated") == nil)
        #expect(!fm.fileExists(atPath: truncated.path))

        try cache.storeData(bytes, forKey: "padded")
        let padded = cache.fileURL(forKey: "padded")
        try (Data(contentsOf: padded) + Data([0])).write(to: padded)
        #expect(try cache.entry(forKey: "padded") == nil)
        #expect(!fm.fileExists(atPath: padded.path))

        let garbage = cache.fileURL(forKey: "garbage")
        try CacheFixtures.bytes(count: 300, seed: 3).write(to: garbage)
        #expect(try cache.entry(forKey: "garbage") == nil)
        #expect(!fm.fileExists(atPath: garbage.path))

        let tiny = cache.fileURL(forKey: "tiny")
        try Data("WIC1".utf8).write(to: tiny)
        #expect(try cache.entry(forKey: "tiny") == nil)
        #expect(!fm.fileExists(atPath: tiny.path))

        // A valid entry copied under another key's name is foreign to that key.
        try cache.storeData(bytes, forKey: "source")
        try fm.copyItem(at: cache.fileURL(forKey: "source"), to: cache.fileURL(forKey: "victim"))
        #expect(try cache.entry(forKey: "victim") == nil)
        #expect(!fm.fileExists(atPath: cache.fileURL(forKey: "victim").path))
        #expect(cache.data(forKey: "source") == bytes)
        #expect(cache.corruptReads.load(ordering: .relaxed) == 5)
    }

    @Test("a header claiming a huge metadata block is rejected without allocating it")
    func hostileHeader() throws {
        var header = Array("WIC1".utf8)
        header += [0xff, 0xff, 0xff, 0x7f] + [UInt8](repeating: 0xff, count: 8) + [UInt8](repeating: 0, count: 16)
        #expect(header.withUnsafeBytes { DiskEntryCodec.parse($0) } == nil)
        let valid =
            try DiskEntryCodec.header(
                for: CacheEntryMetadata(originalKey: "k", etag: "e"), bodyLength: 3,
                bodyChecksum: [UInt8]([1, 2, 3]).withUnsafeBytes { XXH64.hash($0) }) + [1, 2, 3]
        #expect(valid.withUnsafeBytes { DiskEntryCodec.parse($0) }?.metadata.etag == "e")
        for cut in 0..<valid.count - 1 {
            #expect(valid.prefix(cut).withUnsafeBytes { DiskEntryCodec.parse($0) } == nil)
        }
    }

    @Test("in an owned directory, a sweep removes stale temporaries; entries and foreign files stay")
    func foreignFiles() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory)
        try cache.storeData(Data([1]), forKey: "keep")
        let foreign = directory.appendingPathComponent("notes.txt")
        try Data("hi".utf8).write(to: foreign)
        let staleTemp = directory.appendingPathComponent(".tmp-deadbeef")
        try Data("partial".utf8).write(to: staleTemp)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: staleTemp.path)
        let freshTemp = directory.appendingPathComponent(".tmp-cafe")
        try Data("writing".utf8).write(to: freshTemp)
        cache.sweep()
        #expect(
            DiskTest.files(in: directory)
                == [".tmp-cafe", "notes.txt", DiskFileNaming.fileName(forKey: "keep")].sorted())
        #expect(cache.data(forKey: "keep") == Data([1]))
    }

    @Test("in a directory the cache does not own, foreign files are left alone and nothing is stored")
    func unownedDirectory() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let precious = directory.appendingPathComponent("precious.txt")
        try Data("mine".utf8).write(to: precious)
        let cache = DiskTest.cache(directory, maxDiskSize: 1 << 20)
        #expect(throws: ImageError.self) { try cache.storeData(Data([1]), forKey: "k") }
        cache.sweep()
        cache.removeAll()
        #expect(FileManager.default.fileExists(atPath: precious.path))
        #expect(
            !FileManager.default.fileExists(atPath: directory.appendingPathComponent(DiskEntryStore.markerName).path))
        #expect(cache.totalCount() == 0)
        #expect(DiskTest.files(in: directory) == ["precious.txt"])
    }

    @Test("the directory is recreated when deleted under a running cache")
    func directoryDeleted() throws {
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory, maxDiskSize: 1 << 20)
        try cache.storeData(Data([1]), forKey: "a")
        try FileManager.default.removeItem(at: directory)
        #expect(try cache.entry(forKey: "a") == nil)
        #expect(cache.data(forKey: "a") == nil)
        #expect(!cache.containsData(forKey: "a"))
        #expect(cache.totalSize() == 0)
        try cache.storeData(Data([2]), forKey: "b")
        #expect(cache.data(forKey: "b") == Data([2]))
        try FileManager.default.removeItem(at: directory)
        cache.sweep()
        cache.store(nil, data: Data([3]), metadata: nil, forKey: "c", cacheType: .disk, completion: nil)
        cache.sweep()
        #expect(FileManager.default.fileExists(atPath: directory.path))
        #expect(
            FileManager.default.fileExists(atPath: directory.appendingPathComponent(DiskEntryStore.markerName).path))
        #expect(cache.data(forKey: "c") == Data([3]))
    }

    @Test("the directory is created on demand, nested")
    func createdOnDemand() throws {
        let root = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(root) }
        let directory = root.appendingPathComponent("a/b/c", isDirectory: true)
        let cache = DiskCache(configuration: DiskTest.configuration(directory))
        try cache.storeData(Data([9]), forKey: "k")
        #expect(cache.data(forKey: "k") == Data([9]))
    }

    @Test("the default directory follows XDG_CACHE_HOME, else ~/.cache")
    func defaultDirectory() {
        let url = DiskCacheConfiguration.defaultDirectory(namespace: "ns")
        #expect(url.lastPathComponent == "ns")
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            #expect(
                url.deletingLastPathComponent().standardizedFileURL.path
                    == URL(fileURLWithPath: xdg).standardizedFileURL.path)
        } else {
            #expect(url.deletingLastPathComponent().lastPathComponent == ".cache")
        }
        #expect(DiskCache.shared.directory.lastPathComponent == "webimage")
        #expect(DiskCache.shared.configuration.maxDiskAge == TimeInterval(7 * 24 * 3600))
    }

    @Test("migrate(from:) moves entries of an older directory and removes it")
    func migrate() throws {
        let old = CacheFixtures.temporaryDirectory("old")
        let new = CacheFixtures.temporaryDirectory("new")
        defer {
            DiskTest.removeDirectory(old)
            DiskTest.removeDirectory(new)
        }
        do {
            let oldCache = DiskTest.cache(old)
            try oldCache.storeData(Data([1]), metadata: CacheEntryMetadata(etag: "one"), forKey: "one.png")
            try oldCache.storeData(Data([2]), forKey: "two")
            try oldCache.storeData(Data([3]), forKey: "both")
        }
        let cache = DiskTest.cache(new)
        try cache.storeData(Data([30]), forKey: "both")
        #expect(try cache.migrate(from: old) == 2)
        #expect(try cache.entry(forKey: "one.png")?.metadata.etag == "one")
        #expect(cache.data(forKey: "two") == Data([2]))
        #expect(cache.data(forKey: "both") == Data([30]))
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(try cache.migrate(from: old) == 0)
    }
}
