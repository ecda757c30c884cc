import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Issue 32 defect 10: a cache never deletes what it cannot prove is its own — only in a directory that carries
/// its marker, and there only names it writes. Every test puts a user's files beside the cache and drives the
/// cache through its public API (start-up, stores, removals, clears, sweeps with size and age limits, migration).
@Suite("DiskCache directory ownership")
struct DiskCacheOwnershipTests {
    /// A day ago: older than the stale-temporary age and the tests' `maxDiskAge`.
    static let longAgo = Date().addingTimeInterval(-24 * 3600)

    static let hex64 = String(repeating: "0123456789abcdef", count: 4)
    static let otherHex64 = String(repeating: "fedcba9876543210", count: 4)

    /// Every file and directory under `root` (paths relative to it), with each file's bytes.
    static func snapshot(_ root: URL) -> [String: Data?] {
        var result: [String: Data?] = [:]
        let fm = FileManager.default
        guard let walker = fm.enumerator(atPath: root.path) else { return result }
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = root.appendingPathComponent(relative).path
            _ = fm.fileExists(atPath: path, isDirectory: &isDirectory)
            result[relative] = isDirectory.boolValue ? .some(nil) : fm.contents(atPath: path)
        }
        return result
    }

    /// Writes `name` in `directory` with content derived from the name, dated a day ago.
    static func plant(_ name: String, in directory: URL) throws {
        let url = directory.appendingPathComponent(name)
        try Data("user data: \(name)".utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: longAgo], ofItemAtPath: url.path)
    }

    /// A user's directory of the shapes the issue names: 64 hex digits with and without an extension (a SHA-256
    /// named file, what version 1 of the cache wrote), `.tmp-` names (one in the cache's own temporary grammar),
    /// names of the cache's version-2 grammar, other files and a subdirectory — all a day old.
    static func userDirectory(_ label: String) throws -> URL {
        let directory = CacheFixtures.temporaryDirectory(label)
        for name in [
            Self.hex64, Self.hex64 + ".json", Self.otherHex64 + ".png", ".tmp-x", ".tmp-1a2b-3c", ".tmp-cafe",
            "v2-" + Self.hex64, "v2-" + Self.otherHex64 + ".png",
            DiskFileNaming.fileName(forKey: "https://example.com/cat.png"),
            "notes.txt",
        ] {
            try plant(name, in: directory)
        }
        let sub = directory.appendingPathComponent(Self.otherHex64, isDirectory: true)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try plant(Self.otherHex64 + ".json", in: sub)
        return directory
    }

    static func expectNotOwned(_ error: ImageError?, _ directory: URL) {
        #expect(error?.code == .cacheFailure)
        let cause = error?.underlying as? DiskCacheDirectoryNotOwned
        #expect(cause?.directory == directory.standardizedFileURL.path, "\(String(describing: error))")
    }

    @Test(
        "a directory with a user's files and no marker: nothing is deleted or written there, by any call, and stores fail with DiskCacheDirectoryNotOwned"
    )
    func unmarkedDirectoryIsNeverTouched() async throws {
        let directory = try Self.userDirectory("disk-user")
        defer { DiskTest.removeDirectory(directory) }
        let before = Self.snapshot(directory)
        #expect(before.count == 12)

        // Limits that would expire, trim and clean everything the cache thought its own.
        let cache = DiskTest.cache(directory, maxDiskSize: 10, maxDiskAge: 60)
        #expect(!cache.ownsDirectory)
        do {
            try cache.storeData(Data([1, 2, 3]), forKey: "k")
            Issue.record("a store in a foreign directory must fail")
        } catch {
            Self.expectNotOwned(error, directory)
        }
        let asyncError: ImageError? = await {
            do {
                try await cache.store(nil, data: Data([4]), forKey: "k2", cacheType: .disk)
                return nil
            } catch {
                return error as? ImageError
            }
        }()
        Self.expectNotOwned(asyncError, directory)
        #expect(try cache.entry(forKey: "https://example.com/cat.png") == nil, "a user's file is never served")
        #expect(!cache.containsData(forKey: "https://example.com/cat.png"))
        cache.removeData(forKey: "https://example.com/cat.png")
        await cache.removeImage(forKey: "https://example.com/cat.png", cacheType: .disk)
        cache.sweep()
        cache.removeExpired()
        cache.removeAll()
        await cache.clear(cacheType: .disk)
        await cache.waitForPendingWrites()
        #expect(Self.snapshot(directory) == before, "every file is still there, byte for byte; no marker was added")

        // A second instance (another process) decides the same.
        let again = DiskTest.cache(directory, maxDiskSize: 10, maxDiskAge: 60)
        again.sweep()
        #expect(!again.ownsDirectory)
        #expect(Self.snapshot(directory) == before)
    }

    @Test("in its own (marked) directory the cache deletes only names it writes; a user's files there stay")
    func markedDirectoryKeepsForeignNames() async throws {
        let directory = CacheFixtures.temporaryDirectory("disk-own")
        defer { DiskTest.removeDirectory(directory) }
        let cache = DiskTest.cache(directory, maxDiskSize: 1 << 20, maxDiskAge: 3600)
        #expect(cache.ownsDirectory)
        try cache.storeData(Data([1]), forKey: "mine")
        // The user's files: not the cache's names, even when close to them.
        let foreign = [
            "notes.txt", Self.hex64 + "x", Self.hex64.uppercased(), Self.hex64 + ".toolong",
            "v2-" + Self.hex64 + ".toolong",
            "v3-" + Self.hex64, ".tmp-X", ".tmp-user_file", ".tmp-", ".tmp-a-", "v2-" + Self.hex64.uppercased(),
        ]
        for name in foreign { try Self.plant(name, in: directory) }
        let sub = directory.appendingPathComponent("v2-" + Self.otherHex64, isDirectory: true)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try Self.plant(Self.hex64, in: sub)
        // The cache's own: an entry of version 1, stale temporaries of this and earlier versions, an old entry.
        let own = [
            Self.hex64 + ".png", ".tmp-1a2b-3c", ".tmp-cafe", ".tmp-zz9-v2-" + Self.otherHex64 + ".webp",
            "v2-" + Self.otherHex64 + ".gif",
        ]
        for name in own { try Self.plant(name, in: directory) }
        let userFiles = Self.snapshot(directory).filter { entry in
            !own.contains(entry.key) && entry.key != DiskFileNaming.fileName(forKey: "mine")
                && entry.key != DiskEntryStore.markerName
        }
        #expect(userFiles.count == foreign.count + 2)

        cache.sweep()
        let afterSweep = Self.snapshot(directory)
        for name in own { #expect(afterSweep[name] == nil, "\(name) is the cache's and stale: swept") }
        #expect(cache.data(forKey: "mine") == Data([1]))
        cache.removeAll()
        await cache.clear(cacheType: .disk)
        #expect(cache.data(forKey: "mine") == nil)
        let after = Self.snapshot(directory)
        #expect(after.filter { $0.key != DiskEntryStore.markerName } == userFiles, "the user's files are untouched")
        #expect(after[DiskEntryStore.markerName] != nil, "the marker stays")
    }

    @Test("a new or empty directory is made the cache's own (marked); a foreign one becomes it once emptied or marked")
    func adoption() throws {
        let root = CacheFixtures.temporaryDirectory("disk-adopt")
        defer { DiskTest.removeDirectory(root) }
        let marker = { (directory: URL) in
            FileManager.default.fileExists(atPath: directory.appendingPathComponent(DiskEntryStore.markerName).path)
        }

        let empty = root.appendingPathComponent("empty", isDirectory: true)
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let onEmpty = DiskTest.cache(empty)
        #expect(onEmpty.ownsDirectory && marker(empty))

        let missing = root.appendingPathComponent("a/b", isDirectory: true)
        let onMissing = DiskTest.cache(missing)
        #expect(onMissing.ownsDirectory, "a directory that does not exist yet counts as the cache's")
        try onMissing.storeData(Data([1]), forKey: "k")
        #expect(marker(missing) && onMissing.data(forKey: "k") == Data([1]))

        let foreign = root.appendingPathComponent("foreign", isDirectory: true)
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
        try Self.plant("notes.txt", in: foreign)
        let onForeign = DiskTest.cache(foreign)
        #expect(!onForeign.ownsDirectory && !marker(foreign))
        // The user marks it by hand: the next sweep adopts it.
        try Data().write(to: foreign.appendingPathComponent(DiskEntryStore.markerName))
        onForeign.sweep()
        #expect(onForeign.ownsDirectory)
        try onForeign.storeData(Data([2]), forKey: "k")
        #expect(onForeign.data(forKey: "k") == Data([2]))
        onForeign.removeAll()
        #expect(DiskTest.files(in: foreign) == ["notes.txt"])

        // Its marker deleted while it runs, the directory stops being the cache's at the next sweep.
        try onForeign.storeData(Data([3]), forKey: "k")
        try FileManager.default.removeItem(at: foreign.appendingPathComponent(DiskEntryStore.markerName))
        onForeign.sweep()
        #expect(!onForeign.ownsDirectory)
        onForeign.removeAll()
        #expect(DiskTest.files(in: foreign).count == 2, "its own entry stays too: nothing proves it is")
        // Emptied, it is adopted again.
        for name in DiskTest.files(in: foreign) {
            try FileManager.default.removeItem(at: foreign.appendingPathComponent(name))
        }
        onForeign.sweep()
        #expect(onForeign.ownsDirectory && marker(foreign))
    }

    @Test("migrate(from:) refuses a directory without the marker and moves nothing out of it")
    func migrateFromUnmarked() throws {
        let old = try Self.userDirectory("disk-old")
        let new = CacheFixtures.temporaryDirectory("disk-new")
        defer {
            DiskTest.removeDirectory(old)
            DiskTest.removeDirectory(new)
        }
        // A real entry among the user's files, copied in from a cache.
        let source = DiskTest.cache()
        defer { DiskTest.removeDirectory(source.directory) }
        try source.storeData(Data([7]), forKey: "k")
        try FileManager.default.copyItem(
            at: source.fileURL(forKey: "k"), to: old.appendingPathComponent(DiskFileNaming.fileName(forKey: "k")))
        let before = Self.snapshot(old)
        let cache = DiskTest.cache(new)
        do {
            try cache.migrate(from: old)
            Issue.record("migrating from a directory without the marker must fail")
        } catch {
            Self.expectNotOwned(error, old)
        }
        #expect(Self.snapshot(old) == before)
        #expect(cache.data(forKey: "k") == nil)
    }

    // MARK: Property

    /// A name in the directory and whether the cache may delete it (by how it was made, not by the cache's own
    /// name functions).
    struct Planted: Sendable, CustomStringConvertible {
        let name: String
        let isCacheName: Bool
        var description: String { "\(name)\(isCacheName ? " (cache's)" : "")" }
    }

    static let hexDigits = Array("0123456789abcdef")
    static let base36 = Array("0123456789abcdefghijklmnopqrstuvwxyz")

    static func hexString(_ seed: UInt64, count: Int) -> String {
        var generator = SplitMix64(seed: seed)
        return String((0..<count).map { _ in hexDigits[Int(generator.next() % 16)] })
    }

    static func base36String(_ seed: UInt64, count: Int) -> String {
        var generator = SplitMix64(seed: seed)
        return String((0..<count).map { _ in base36[Int(generator.next() % 36)] })
    }

    /// Names of every shape the issue lists, drawn from a shape and a seed.
    static let plantedGenerator = zip(Gen.int(in: 0...13), Gen.uint64()).map { shape, seed in
        plant(shape: shape, seed: seed)
    }

    static func plant(shape: Int, seed: UInt64) -> Planted {
        let hex = hexString(seed, count: 64)
        let ext = ["json", "png", "txt", "x", "webp"][Int(seed % 5)]
        switch shape {
        case 0: return Planted(name: hex, isCacheName: true)  // a version-1 entry, or a user's SHA-256 file
        case 1: return Planted(name: hex + "." + ext, isCacheName: true)
        case 2: return Planted(name: "v2-" + hex, isCacheName: true)
        case 3: return Planted(name: "v2-" + hex + "." + ext, isCacheName: true)
        case 4:
            return Planted(
                name: ".tmp-" + base36String(seed, count: 1 + Int(seed % 13)) + "-"
                    + base36String(seed >> 7, count: 1 + Int((seed >> 9) % 13)), isCacheName: true)
        case 5: return Planted(name: ".tmp-" + hexString(seed, count: 1 + Int(seed % 32)), isCacheName: true)
        case 6: return Planted(name: ".tmp-" + base36String(seed, count: 6) + "-v2-" + hex, isCacheName: true)
        case 7: return Planted(name: hex.uppercased(), isCacheName: false)
        case 8: return Planted(name: hex + "." + ext + "-1", isCacheName: false)
        case 9: return Planted(name: ".tmp-User_" + base36String(seed, count: 4), isCacheName: false)
        case 10: return Planted(name: "v2-" + hex + "-copy", isCacheName: false)
        case 11: return Planted(name: "notes-\(seed % 1000).txt", isCacheName: false)
        case 12: return Planted(name: String(hex.dropLast()), isCacheName: false)
        default: return Planted(name: "v2-" + hex.prefix(63) + "g." + ext, isCacheName: false)
        }
    }

    @Test(
        "property: whatever a directory holds, the cache deletes nothing in it without the marker, and with the marker only names it writes"
    )
    func propertyDeletesOnlyItsOwnNames() async throws {
        let cases = Atomic<Int>(0)
        let markedCases = Atomic<Int>(0)
        print("DiskCache ownership property: 120 random directories (a failure prints the seed to replay it)")
        await propertyCheck(count: 120, input: Self.plantedGenerator.array(of: 1...12), Gen.bool) {
            planted, marked in
            cases.add(1, ordering: .relaxed)
            if marked { markedCases.add(1, ordering: .relaxed) }
            let directory = CacheFixtures.temporaryDirectory("disk-prop")
            defer { DiskTest.removeDirectory(directory) }
            let names = Dictionary(planted.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for item in names.values { try? Self.plant(item.name, in: directory) }
            let sub = directory.appendingPathComponent(Self.hex64, isDirectory: true)
            try? FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            try? Self.plant(Self.hex64, in: sub)
            if marked { try? Self.plant(DiskEntryStore.markerName, in: directory) }
            let before = Self.snapshot(directory)

            let cache = DiskTest.cache(directory, maxDiskSize: 16, maxDiskAge: 60)
            _ = try? cache.storeData(Data(repeating: 1, count: 64), forKey: "https://h/a.png")
            cache.store(nil, data: Data([2]), metadata: nil, forKey: "b", cacheType: .disk, completion: nil)
            cache.removeData(forKey: "https://h/a.png")
            cache.sweep()
            cache.removeAll()
            await cache.waitForPendingWrites()
            let after = Self.snapshot(directory)

            #expect(cache.ownsDirectory == marked, "\(planted)")
            if !marked {
                #expect(after == before, "an unmarked directory is never changed: \(planted)")
                return
            }
            for (path, content) in before {
                let item = names[path]
                if item?.isCacheName == true {
                    #expect(after[path] == nil, "the cache's stale name \(path) is cleaned")
                } else {
                    #expect(after[path] == content, "\(path) is not the cache's name: it stays, unchanged")
                }
            }
        }
        print(
            "DiskCache ownership property: \(cases.load(ordering: .relaxed)) cases, \(markedCases.load(ordering: .relaxed)) marked"
        )
    }
}
