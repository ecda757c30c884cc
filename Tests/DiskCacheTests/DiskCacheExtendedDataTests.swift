import Foundation
import ImageCore
import ImageTestSupport
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Issue 25 item 3: a caller's small blob stored with a disk entry and returned with it, as SDWebImage's
/// `SDImageCache` does with `extendedData` (the archived `sd_extendedObject` of an image).
@Suite("DiskCache extended data")
struct DiskCacheExtendedDataTests {
    static let blob = Data("{\"userInfo\":\"crop=face\",\"v\":3}".utf8)

    /// Inode and modification time of `key`'s entry file (a rewrite of the bytes changes the inode).
    static func identity(_ cache: DiskCache, _ key: String) throws -> (inode: UInt64, size: Int) {
        let attributes = try FileManager.default.attributesOfItem(atPath: cache.fileURL(forKey: key).path)
        return (
            (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0,
            (attributes[.size] as? NSNumber)?.intValue ?? -1
        )
    }

    @Test("SDImageCache extendedData (sd_extendedObject): stored with an entry, returned with its hit and query")
    func storeAndReturn() async throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        let bytes = CacheFixtures.bytes(count: 10_000, seed: 3)
        try cache.storeData(bytes, metadata: CacheEntryMetadata(etag: "e1", extendedData: Self.blob), forKey: "k.png")
        let entry = try #require(try cache.entry(forKey: "k.png"))
        #expect(entry.data == bytes)
        #expect(entry.metadata.extendedData == Self.blob)
        #expect(entry.metadata.etag == "e1")
        #expect(try cache.extendedData(forKey: "k.png") == Self.blob)

        // Through ImageCacheProtocol, as the manager and a CachesManager see it.
        try await cache.store(
            nil, data: bytes, metadata: CacheEntryMetadata(extendedData: Data([1, 2, 3])), forKey: "async.png",
            cacheType: .disk)
        let result = try #require(try await cache.queryImage(forKey: "async.png", cacheType: .disk))
        #expect(result.metadata?.extendedData == Data([1, 2, 3]))
        #expect(result.data == bytes)
        // An entry stored without any has none.
        try cache.storeData(bytes, forKey: "plain.png")
        #expect(try cache.entry(forKey: "plain.png")?.metadata.extendedData == nil)
        #expect(try cache.extendedData(forKey: "absent") == nil)
    }

    @Test("SDDiskCache.setExtendedData(_:forKey:): set, replace and remove (nil) without rewriting the bytes")
    func setAndRemoveInPlace() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        let bytes = CacheFixtures.bytes(count: 50_000, seed: 4)
        try cache.storeData(bytes, metadata: CacheEntryMetadata(etag: "tag"), forKey: "k")
        let before = try Self.identity(cache, "k")

        #expect(try cache.setExtendedData(Self.blob, forKey: "k"))
        #expect(try cache.extendedData(forKey: "k") == Self.blob)
        #expect(try cache.setExtendedData(Data("second".utf8), forKey: "k"))
        #expect(try cache.extendedData(forKey: "k") == Data("second".utf8))
        #expect(try cache.setExtendedData(nil, forKey: "k"))
        #expect(try cache.extendedData(forKey: "k") == nil)
        #expect(try cache.setExtendedData(nil, forKey: "k"), "removing what is not there is fine")

        let after = try Self.identity(cache, "k")
        #expect(after.inode == before.inode && after.size == before.size, "the entry file was not rewritten")
        let entry = try #require(try cache.entry(forKey: "k"))
        #expect(entry.data == bytes && entry.metadata.etag == "tag")
    }

    @Test("SDDiskCache.setExtendedData(_:forKey:) on a missing, expired or foreign entry stores nothing")
    func setOnMissingEntry() throws {
        let clock = ManualDate()
        let cache = DiskTest.cache(maxDiskAge: 100, clock: clock)
        defer { DiskTest.removeDirectory(cache.directory) }
        #expect(try !cache.setExtendedData(Self.blob, forKey: "absent"))
        #expect(DiskTest.files(in: cache.directory).isEmpty)
        try cache.storeData(Data([1]), forKey: "old")
        clock.advance(200)
        #expect(try !cache.setExtendedData(Self.blob, forKey: "old"))
        // Another key's file under this key's name (copied there by hand): not this key's entry.
        try cache.storeData(Data([2]), forKey: "other")
        try FileManager.default.copyItem(at: cache.fileURL(forKey: "other"), to: cache.fileURL(forKey: "mine"))
        #expect(try !cache.setExtendedData(Self.blob, forKey: "mine"))
        #expect(try cache.extendedData(forKey: "other") == nil)
    }

    @Test("a later store replaces the extended data with its own (or none), atomically with the bytes")
    func storeReplaces() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data([1]), metadata: CacheEntryMetadata(extendedData: Data("one".utf8)), forKey: "k")
        try cache.storeData(Data([2]), metadata: CacheEntryMetadata(extendedData: Data("two".utf8)), forKey: "k")
        #expect(try cache.entry(forKey: "k")?.metadata.extendedData == Data("two".utf8))
        try cache.storeData(Data([3]), forKey: "k")
        let entry = try #require(try cache.entry(forKey: "k"))
        #expect(entry.data == Data([3]) && entry.metadata.extendedData == nil)
        cache.removeData(forKey: "k")
        #expect(try cache.extendedData(forKey: "k") == nil)
    }

    @Test("SDImageCache extendedData survives a restart: a new cache on the directory returns it")
    func survivesRestart() throws {
        let directory = CacheFixtures.temporaryDirectory("disk-ext")
        defer { DiskTest.removeDirectory(directory) }
        do {
            let first = DiskTest.cache(directory)
            try first.storeData(Data([7]), metadata: CacheEntryMetadata(extendedData: Self.blob), forKey: "a")
            try first.storeData(Data([8]), forKey: "b")
            #expect(try first.setExtendedData(Data("later".utf8), forKey: "b"))
        }
        let second = DiskTest.cache(directory)
        #expect(try second.extendedData(forKey: "a") == Self.blob)
        #expect(try second.extendedData(forKey: "b") == Data("later".utf8))
        // Migration to another directory keeps it.
        let moved = CacheFixtures.temporaryDirectory("disk-ext-moved")
        defer { DiskTest.removeDirectory(moved) }
        let third = DiskTest.cache(moved)
        #expect(try third.migrate(from: directory) == 2)
        #expect(try third.extendedData(forKey: "a") == Self.blob)
        #expect(try third.entry(forKey: "b")?.metadata.extendedData == Data("later".utf8))
    }

    @Test("extended data over DiskCache.maxExtendedDataSize is a typed error; the entry stays as it was")
    func tooLarge() async throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        let limit = DiskCache.maxExtendedDataSize
        #expect(limit == 2048)
        let atLimit = CacheFixtures.bytes(count: limit, seed: 1)
        try cache.storeData(Data([1]), metadata: CacheEntryMetadata(extendedData: atLimit), forKey: "k")
        #expect(try cache.extendedData(forKey: "k") == atLimit)

        let over = Data(count: limit + 1)
        func expectTooLarge(_ error: ImageError) {
            #expect(error.code == .cacheFailure && error.stage == .cacheStore)
            #expect(error.underlying as? DiskCacheExtendedDataTooLarge == .init(size: limit + 1, limit: limit))
        }
        do {
            try cache.storeData(Data([2]), metadata: CacheEntryMetadata(extendedData: over), forKey: "k")
            Issue.record("a store with too much extended data succeeded")
        } catch { expectTooLarge(error) }
        do {
            try cache.setExtendedData(over, forKey: "k")
            Issue.record("setExtendedData with too much data succeeded")
        } catch { expectTooLarge(error) }
        do {
            try await cache.store(
                nil, data: Data([3]), metadata: CacheEntryMetadata(extendedData: over), forKey: "k", cacheType: .disk)
            Issue.record("an asynchronous store with too much extended data succeeded")
        } catch { expectTooLarge(error) }
        let entry = try #require(try cache.entry(forKey: "k"))
        #expect(entry.data == Data([1]) && entry.metadata.extendedData == atLimit)
    }

    @Test("a file system without extended attributes fails the change with a typed error, the entry unchanged")
    func unsupportedFileSystem() throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("disk-ext")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskCache(configuration: DiskTest.configuration(directory, faults: faults))
        try cache.storeData(Data([1]), forKey: "k")
        faults.fail(.setxattr, errno: EOPNOTSUPP)
        DiskCacheFaultTests.expectFailure(errno: EOPNOTSUPP) { () throws(ImageError) in
            _ = try cache.setExtendedData(Self.blob, forKey: "k")
        }
        DiskCacheFaultTests.expectFailure(errno: EOPNOTSUPP) { () throws(ImageError) in
            try cache.storeData(Data([2]), metadata: CacheEntryMetadata(extendedData: Self.blob), forKey: "k")
        }
        faults.clear()
        let entry = try #require(try cache.entry(forKey: "k"))
        #expect(entry.data == Data([1]) && entry.metadata.extendedData == nil)
        #expect(!DiskTest.files(in: directory).contains { $0.hasPrefix(".tmp-") })
    }

    @Test("a damaged or foreign extended-data attribute makes the entry a miss, never wrong data")
    func damagedAttribute() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data([1]), metadata: CacheEntryMetadata(extendedData: Self.blob), forKey: "k")
        let path = cache.fileURL(forKey: "k").path
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        // Same name, bytes this cache did not write (the checksum no longer matches).
        var value = DiskExtendedData.encode(Self.blob)
        value[value.count - 1] ^= 0xff
        try DiskFileSystem(faults: nil).setExtendedAttribute(
            fd, name: DiskExtendedData.attributeName, value: value, path: path)
        #expect(try cache.entry(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
