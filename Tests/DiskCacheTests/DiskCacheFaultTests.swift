import Foundation
import ImageCore
import ImageTestSupport
import MemoryCache
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Disk full and read-only directories, two ways: an injected `errno` at a chosen system call (always runs),
/// and a real 1 MiB tmpfs mounted and remounted read-only (runs where the test may mount, e.g. as root).
@Suite("DiskCache faults")
struct DiskCacheFaultTests {
    /// Checks that `body` fails with `cacheFailure` caused by `errno`.
    static func expectFailure(errno expected: Int32, _ body: () throws(ImageError) -> Void) {
        do {
            try body()
            Issue.record("expected a cacheFailure with errno \(expected)")
        } catch {
            #expect(error.code == .cacheFailure)
            #expect(error.stage == .cacheStore)
            #expect((error.underlying as? DiskCacheIOError)?.errno == expected, "\(error)")
        }
    }

    static func temporaryFiles(in directory: URL) -> [String] {
        DiskTest.files(in: directory).filter { $0.hasPrefix(".tmp-") }
    }

    @Test(
        "an injected failure fails the store, leaves the previous entry and no temporary file",
        arguments: [
            (DiskOperation.write, ENOSPC), (.create, EROFS), (.create, EACCES), (.rename, EIO), (.close, ENOSPC),
            (.fsync, EIO),
        ])
    func injectedStoreFailure(operation: DiskOperation, code: Int32) throws {
        let faults = DiskFaultInjector()
        let directory = CacheFixtures.temporaryDirectory("disk")
        defer { DiskTest.removeDirectory(directory) }
        var config = DiskTest.configuration(directory, maxDiskSize: 1 << 20, faults: faults)
        config.fsyncOnWrite = true
        let cache = DiskCache(configuration: config)
        let original = CacheFixtures.bytes(count: 10_000, seed: 1)
        try cache.storeData(original, metadata: CacheEntryMetadata(etag: "v1"), forKey: "k")

        faults.fail(operation, errno: code)
        Self.expectFailure(errno: code) { () throws(ImageError) in
            try cache.storeData(CacheFixtures.bytes(count: 20_000, seed: 2), forKey: "k")
        }
        Self.expectFailure(errno: code) { () throws(ImageError) in
            try cache.storeData(Data([1]), forKey: "new")
        }
        let entry = try #require(try cache.entry(forKey: "k"))
        #expect(entry.data == original)
        #expect(entry.metadata.etag == "v1")
        #expect(!cache.containsData(forKey: "new"))
        #expect(Self.temporaryFiles(in: directory).isEmpty)

        faults.clear()
        try cache.storeData(Data([2]), forKey: "k")
        #expect(cache.data(forKey: "k") == Data([2]))
    }

    @Test("an asynchronous store reports the failure; until then the new bytes are served, then the old")
    func asyncStoreFailure() async throws {
        let faults = DiskFaultInjector()
        let cache = DiskTest.cache(faults: faults)
        defer { DiskTest.removeDirectory(cache.directory) }
        try await cache.store(nil, data: Data([1]), forKey: "k", cacheType: .disk)
        faults.fail(.write, errno: ENOSPC)
        await #expect(throws: ImageError.self) {
            try await cache.store(nil, data: Data([2]), forKey: "k", cacheType: .disk)
        }
        #expect(try await cache.queryImage(forKey: "k")?.data == Data([1]))
    }

    @Test("a read error is a cacheFailure at the query stage, not a miss")
    func readFailure() throws {
        let faults = DiskFaultInjector()
        let cache = DiskTest.cache(faults: faults)
        defer { DiskTest.removeDirectory(cache.directory) }
        try cache.storeData(Data([1]), forKey: "k")
        faults.fail(.read, errno: EIO)
        do {
            _ = try cache.entry(forKey: "k")
            Issue.record("expected a read failure")
        } catch {
            #expect(error.code == .cacheFailure && error.stage == .cacheQuery)
        }
        faults.clear()
        #expect(cache.data(forKey: "k") == Data([1]))
    }

    @Test("with the disk level failing, the two-level cache keeps serving from memory")
    func servesFromMemory() async throws {
        let faults = DiskFaultInjector()
        let disk = DiskTest.cache(faults: faults)
        defer { DiskTest.removeDirectory(disk.directory) }
        let memory = MemoryCache(configuration: MemoryCacheConfiguration(costLimit: 1 << 20))
        let caches = CachesManager([memory, disk])
        faults.fail(.create, errno: EROFS)
        let image = CacheFixtures.image()
        await #expect(throws: ImageError.self) {
            try await caches.store(image, data: Data([1, 2, 3]), forKey: "k", cacheType: .all)
        }
        let hit = try await caches.queryImage(forKey: "k")
        #expect(hit?.image === image)
        #expect(hit?.cacheType == .memory)
    }

    // MARK: Real file systems

    @Test("disk full on a real 1 MiB tmpfs", .enabled(if: TmpfsMount.isAvailable))
    func realDiskFull() throws {
        let mount = try TmpfsMount(sizeKiB: 1024)
        defer { mount.unmount() }
        let directory = mount.url.appendingPathComponent("cache", isDirectory: true)
        let cache = DiskTest.cache(directory)
        let original = CacheFixtures.bytes(count: 200_000, seed: 7)
        try cache.storeData(original, forKey: "k")
        Self.expectFailure(errno: ENOSPC) { () throws(ImageError) in
            try cache.storeData(CacheFixtures.bytes(count: 2_000_000, seed: 8), forKey: "k")
        }
        #expect(cache.data(forKey: "k") == original)
        #expect(Self.temporaryFiles(in: directory).isEmpty)
        // Space came back with the failed temporary file removed: a fitting store works again.
        try cache.storeData(Data([1]), forKey: "small")
        #expect(cache.data(forKey: "small") == Data([1]))
    }

    @Test("read-only file system (tmpfs remounted ro)", .enabled(if: TmpfsMount.isAvailable))
    func realReadOnly() throws {
        let mount = try TmpfsMount(sizeKiB: 1024)
        defer { mount.unmount() }
        let directory = mount.url.appendingPathComponent("cache", isDirectory: true)
        let cache = DiskTest.cache(directory, granularity: 0)
        try cache.storeData(Data([1, 2, 3]), metadata: CacheEntryMetadata(etag: "e"), forKey: "k")
        try mount.remount(readOnly: true)
        Self.expectFailure(errno: EROFS) { () throws(ImageError) in try cache.storeData(Data([9]), forKey: "k") }
        // Reads still work (the access-time refresh fails quietly), and sweeps do not crash.
        #expect(try cache.entry(forKey: "k")?.metadata.etag == "e")
        cache.sweep()
        cache.removeData(forKey: "k")
        #expect(cache.data(forKey: "k") == Data([1, 2, 3]))
        try mount.remount(readOnly: false)
    }
}

/// A tmpfs mounted on a fresh directory for one test (needs CAP_SYS_ADMIN, e.g. root outside a user namespace).
struct TmpfsMount {
    let url: URL

    /// True when this process can mount a tmpfs (probed once).
    static let isAvailable: Bool = {
        guard let probe = try? TmpfsMount(sizeKiB: 64) else { return false }
        probe.unmount()
        return true
    }()

    init(sizeKiB: Int) throws {
        url = CacheFixtures.temporaryDirectory("tmpfs")
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(sizeKiB)k", "tmpfs", url.path]) else {
            try? FileManager.default.removeItem(at: url)
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    func remount(readOnly: Bool) throws {
        guard Self.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", url.path]) else {
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    func unmount() {
        if !Self.run("/bin/umount", [url.path]) { _ = Self.run("/bin/umount", ["-l", url.path]) }
        try? FileManager.default.removeItem(at: url)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        guard FileManager.default.isExecutableFile(atPath: tool) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }
}
